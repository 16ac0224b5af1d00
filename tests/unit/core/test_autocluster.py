"""Autoclusters: jobs the matchmaker cannot tell apart share one key."""

from roost.classad import ClassAd
from roost.core.autocluster import (
    AutoclusterIndex,
    autocluster_key,
    group_jobs,
    job_references,
    machine_references,
    significant_attributes,
)


def job(**attrs):
    base = '[Requirements = TARGET.Memory >= MY.RequestMemory; RequestCpus = 1; RequestMemory = 128; Owner = "alice"]'
    ad = ClassAd(base)
    for k, v in attrs.items():
        ad[k] = v
    return ad


def test_job_references_follow_own_attributes():
    ad = ClassAd("[Requirements = TARGET.Memory >= MY.RequestMemory && Foo; RequestMemory = ImageSize * 2;"
                 " ImageSize = 100; Foo = Bar > 1; Bar = 2; Unrelated = 7]")
    assert job_references(ad) == {"requestmemory", "imagesize", "foo", "bar"}


def test_machine_references_are_job_attributes_slots_read():
    slot = ClassAd('[Requirements = START; START = TARGET.ImageSize < 1000 && TARGET.Owner != "bob";'
                   ' Rank = TARGET.KFlops + Memory; Memory = 10]')
    assert machine_references([slot]) == {"imagesize", "owner", "kflops"}


def test_same_significant_values_same_key():
    sig = significant_attributes(job())
    assert autocluster_key(job(ProcId=1, Args="a"), sig) == autocluster_key(job(ProcId=2, Args="b"), sig)
    assert autocluster_key(job(), sig) != autocluster_key(job(RequestMemory=256), sig)
    # 1, 1.0, true and "1" are different values to ClassAds
    keys = {autocluster_key(job(RequestCpus=v), sig) for v in (1, 1.0, True, "1")}
    assert len(keys) == 4


def test_machine_refs_make_attributes_significant():
    a, b = job(ImageSize=10), job(ImageSize=5000)
    sig = significant_attributes(a)
    assert autocluster_key(a, sig) == autocluster_key(b, sig)
    sig = significant_attributes(a, {"imagesize"})
    assert autocluster_key(a, sig) != autocluster_key(b, sig)


def test_index_add_remove_move_and_ids_stable():
    idx = AutoclusterIndex()
    a1 = idx.add("1.0", job())
    assert idx.add("1.1", job()) == a1
    b = idx.add("2.0", job(RequestMemory=2048))
    assert b != a1
    assert [(c.id, sorted(c.jobs)) for c in idx.clusters()] == [(a1, ["1.0", "1.1"]), (b, ["2.0"])]
    idx.add("1.1", job(RequestMemory=2048))  # an edit moves the job
    assert idx.cluster_of("1.1") == b
    idx.remove("1.0")
    assert [c.id for c in idx.clusters()] == [b]  # the empty group is gone
    assert idx.clusters()[0].representative.eval("RequestMemory") == 2048
    idx.remove("nope")


def test_group_jobs_and_reset():
    jobs = {f"1.{i}": job(ImageSize=i % 2) for i in range(10)}
    assert [len(c.jobs) for c in group_jobs(jobs)] == [10]
    assert sorted(len(c.jobs) for c in group_jobs(jobs, {"ImageSize"})) == [5, 5]
    idx = AutoclusterIndex()
    for k, v in jobs.items():
        idx.add(k, v)
    idx.reset({"imagesize"}, jobs)
    assert len(idx.clusters()) == 2
