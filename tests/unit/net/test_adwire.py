import json
import math

import pytest

from roost.classad import ClassAd
from roost.classad.jsonform import ad_to_obj
from roost.net.adwire import obj_to_ad
from roost.net.errors import RequestError


def wire(ad):
    return obj_to_ad(json.loads(json.dumps(ad_to_obj(ad))))


def test_literals_are_json_values_and_expressions_are_marked():
    ad = ClassAd('[A = 1; B = "x"; C = A + 1; D = {1, A}; E = [x = 1]; F = undefined; G = error; H = 2.5]')
    obj = ad_to_obj(ad)
    assert obj == {
        "A": 1, "B": "x", "C": "/Expr(A + 1)/", "D": [1, "/Expr(A)/"], "E": {"x": 1},
        "F": None, "G": "/Expr(error)/", "H": 2.5,
    }
    assert list(obj) == ["A", "B", "C", "D", "E", "F", "G", "H"]


def test_round_trip_keeps_meaning():
    ad = ClassAd('[Requirements = TARGET.Memory >= 1024 && Arch == "X86_64"; Rank = Memory; '
                 'N = -7; T = absTime("2020-01-01T00:00:00Z"); S = "quote\\" and \\\\"]')
    back = wire(ad)
    assert back == ad
    m = ClassAd({"Memory": 2048, "Arch": "X86_64"})
    assert m.matches(back)  # back's Requirements, evaluated against m


def test_special_reals():
    ad = ClassAd({"a": float("nan"), "b": float("inf"), "c": -float("inf")})
    back = wire(ad)
    assert math.isnan(back.eval("a"))
    assert back.eval("b") == float("inf") and back.eval("c") == -float("inf")


@pytest.mark.parametrize("bad", [[1], "x", {"a": "/Expr(1 +)/"}])
def test_bad_objects_are_request_errors(bad):
    with pytest.raises(RequestError) as e:
        obj_to_ad(bad)
    assert e.value.code == "BAD_REQUEST"
