"""What a container or a JVM adds to a job's latency, against a vanilla job in the same pool.

Runnable on its own::

    .venv/bin/python bench/universe_bench.py [--runs N]

One personal pool (8 static slots, as ``pool_bench``, with the container and JVM probes
on); each run submits one job through the Python API and waits for its terminated event
in the user log (``pool_bench``'s latency_api), the pool idle between runs:
- ``vanilla_latency``: ``/bin/true``;
- ``container_latency``: ``universe = container`` running ``/bin/true`` of a busybox
  image built from scratch (``podman import``, as the tests do: no registry here);
- ``java_latency``: ``universe = java`` running an empty ``main`` (needs a JDK).
Each prints ``figure: median s (reference: vanilla median, ratio: vanilla/figure)``: a
ratio of 0.25 means the universe's job takes four times a vanilla job's time. The first
run of each kind warms the claim (and the runtime's storage) and is not counted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from pool_bench import BenchPool, wait_terminated  # noqa: E402

IMAGE = "localhost/roost-bench-busybox:1"
PROBES = "\nSTARTD_DETECT_CONTAINERS = True\nSTARTD_DETECT_JAVA = True\n"


def build_image() -> str | None:
    """The busybox image, or why there is none."""
    from roost.daemons.startd import container

    rt, why = container.probe()
    if rt is None or rt.kind != "podman":
        return why or "the image is built with podman"
    busybox = shutil.which("busybox", path="/bin:/usr/bin")
    if busybox is None:
        return "no busybox (Debian: apt-get install busybox-static)"
    with tempfile.TemporaryDirectory() as tmp:
        tar = os.path.join(tmp, "rootfs.tar")
        with tarfile.open(tar, "w") as t:
            t.add(busybox, "bin/busybox")
            link = tarfile.TarInfo("bin/true")
            link.type, link.linkname = tarfile.SYMTYPE, "busybox"
            t.addfile(link)
        got = subprocess.run([rt.path, *rt.options, "import", tar, IMAGE], capture_output=True, text=True)
    return None if got.returncode == 0 else got.stderr.strip()


def build_class(directory: Path) -> str | None:
    javac = shutil.which("javac")
    if javac is None:
        return "no javac (Debian: apt-get install default-jdk-headless)"
    (directory / "Empty.java").write_text("public class Empty { public static void main(String[] a) {} }\n")
    subprocess.run([javac, "-d", str(directory), str(directory / "Empty.java")], check=True)
    return None


def wait_attr(bp: BenchPool, attr: str, timeout: float = 60.0) -> bool:
    from roost.api.collector import Collector

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        c = Collector(bp.home)
        try:
            if c.query_objs("Machine", constraint=f"{attr} =?= true"):
                return True
        finally:
            c.close()
        time.sleep(0.2)
    return False


def latencies(bp: BenchPool, name: str, text: str, runs: int, setup: Path | None = None) -> list[float]:
    from roost.api.schedd import Schedd

    out = []
    for i in range(runs + 1):
        d = bp.home / f"{name}{i}"
        d.mkdir()
        os.chmod(d, 0o777)
        if setup is not None:
            shutil.copy(setup, d / setup.name)
        (d / "job.sub").write_text(text + "log = job.log\nqueue\n")
        t0 = time.perf_counter()
        cwd = os.getcwd()
        os.chdir(d)
        try:
            s = Schedd(bp.home)
            s.submit_file("job.sub")
            s.close()
        finally:
            os.chdir(cwd)
        t1 = wait_terminated(d / "job.log", 1, timeout=120)
        if i:
            out.append(t1 - t0)
        time.sleep(0.2)
    return out


def show(name: str, values: list[float] | None, ref: float, why: str = "") -> None:
    if not values:
        print(f"{name}: n/a s (reference: {ref:.3f}, ratio: n/a) -- {why}", flush=True)
        return
    v = statistics.median(values)
    print(f"{name}: {v:.3f} s (reference: {ref:.3f}, ratio: {ref / v:.2f}) "
          f"[{len(values)} runs, min {min(values):.3g}, max {max(values):.3g}; reference: vanilla_latency]",
          flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=7)
    a = p.parse_args()
    image_why = build_image()
    with BenchPool(PROBES) as bp:
        vanilla = latencies(bp, "van", "executable = /bin/true\n", a.runs)
        ref = statistics.median(vanilla)
        print(f"vanilla_latency: {ref:.3f} s (reference: {ref:.3f}, ratio: 1.00) [{len(vanilla)} runs]", flush=True)
        if image_why is None and wait_attr(bp, "HasContainer"):
            show("container_latency", latencies(bp, "con", f"universe = container\ncontainer_image = docker://{IMAGE}\n"
                                                "executable = /bin/true\ntransfer_executable = false\n", a.runs), ref)
        else:
            show("container_latency", None, ref, image_why or "the startd advertised no HasContainer")
        cls_dir = bp.home / "cls"
        cls_dir.mkdir()
        class_why = build_class(cls_dir)
        if class_why is None and wait_attr(bp, "HasJava"):
            show("java_latency", latencies(bp, "java", "universe = java\nexecutable = Empty.class\narguments = Empty\n",
                                           a.runs, setup=cls_dir / "Empty.class"), ref)
        else:
            show("java_latency", None, ref, class_why or "the startd advertised no HasJava")
    return 0


if __name__ == "__main__":
    sys.exit(main())
