"""The master's restart back-off: quick deaths slow restarts down, a stable run forgives."""

from roost.daemons.backoff import Backoff


def test_delays_double_up_to_the_ceiling():
    b = Backoff(constant=1, factor=2, ceiling=60, recover=60)
    delays = []
    t = 0.0
    for _ in range(9):
        b.started(t)
        t += 0.5  # dies half a second after each start
        delays.append(b.died(t))
        t += delays[-1]
    assert delays == [1, 2, 4, 8, 16, 32, 60, 60, 60]


def test_a_daemon_that_stayed_up_is_restarted_quickly_again():
    b = Backoff(constant=1, factor=2, ceiling=60, recover=60)
    b.started(0)
    assert b.died(1) == 1
    b.started(2)
    assert b.died(3) == 2
    b.started(10)
    assert b.died(100) == 1  # up 90 s >= recover


def test_reset_forgets_failures():
    b = Backoff(constant=1, factor=2, ceiling=60, recover=60)
    for t in range(5):
        b.started(t)
        b.died(t + 0.1)
    b.reset()
    b.started(10)
    assert b.died(10.5) == 1
