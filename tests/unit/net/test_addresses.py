import threading
import time

import pytest

from roost.net.addresses import (
    parse_address,
    read_address,
    remove_address,
    wait_address,
    write_address,
)


def test_parse_forms():
    assert parse_address("127.0.0.1:9618") == ("tcp", ("127.0.0.1", 9618))
    assert parse_address("[::1]:80") == ("tcp", ("::1", 80))
    assert parse_address("<10.0.0.1:5?addrs=x>") == ("tcp", ("10.0.0.1", 5))
    assert parse_address("unix:/tmp/s.sock") == ("unix", "/tmp/s.sock")


@pytest.mark.parametrize("bad", ["", "host", "host:x", "host:0", "host:70000", ":5", "unix:"])
def test_parse_rejects(bad):
    with pytest.raises(ValueError):
        parse_address(bad)


def test_write_read_remove(tmp_path):
    p = tmp_path / "run" / "x.address"
    assert read_address(p) is None
    write_address(p, "127.0.0.1:1234")
    assert read_address(p) == "127.0.0.1:1234"
    assert [f.name for f in p.parent.iterdir()] == ["x.address"]  # no temp file left
    remove_address(p, "127.0.0.1:9999")  # not ours any more: kept
    assert read_address(p) == "127.0.0.1:1234"
    remove_address(p, "127.0.0.1:1234")
    assert read_address(p) is None


def test_wait_for_address(tmp_path):
    p = tmp_path / "y.address"
    t = threading.Timer(0.05, write_address, (p, "127.0.0.1:5"))
    t.start()
    try:
        assert wait_address(p, timeout=5) == "127.0.0.1:5"
    finally:
        t.cancel()
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="nothing.address"):
        wait_address(tmp_path / "nothing.address", timeout=0.05)
    assert time.monotonic() - start < 2


def test_a_wildcard_bind_is_advertised_as_the_hosts_address():
    from roost.net.addresses import advertised

    assert advertised("0.0.0.0:9618", "10.0.0.5") == "10.0.0.5:9618"
    assert advertised("[::]:9618", "fd00::5") == "[fd00::5]:9618"
    assert advertised("0.0.0.0:9618", None) == "0.0.0.0:9618"  # nothing better known
    assert advertised("127.0.0.1:9618", "10.0.0.5") == "127.0.0.1:9618"  # a bound host stays
    assert advertised("unix:/run/s.sock", "10.0.0.5") == "unix:/run/s.sock"


def test_collector_host_forms():
    from roost.net.addresses import collector_address

    assert collector_address("cm.example:9000", 9618) == "cm.example:9000"
    assert collector_address("cm.example", 9700) == "cm.example:9700"
    assert collector_address("[fd00::1]", 9618) == "[fd00::1]:9618"
    assert collector_address("unix:/run/c.sock", 9618) == "unix:/run/c.sock"
    assert collector_address("127.0.0.1:0", 9618) is None  # the one this home published
    assert collector_address("  ", 9618) is None
