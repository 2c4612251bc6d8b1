"""Session.evaluate's judge keywords are the C++ judge's (src/replay/judge.hpp, JudgeOverrides):
a key added there and not here (or the reverse) would be silently dropped or refused."""
import os
import re

import pytest

from kerncap import engine

HPP = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                   "src", "replay", "judge.hpp")


def test_python_judge_keys_are_the_cpp_keys():
    if not os.path.isfile(HPP):
        pytest.skip("src/replay/judge.hpp is not in this tree")
    text = open(HPP).read()
    block = text[text.index("struct JudgeOverrides {"):text.index("static JudgeOverrides from_json")]
    cpp = set(re.findall(r'\["(\w+)"', block))
    # spec, fuzz and seed are Session.evaluate's named arguments; the rest travel as **judge.
    assert cpp == engine._JUDGE_KEYS | {"spec", "fuzz", "seed"}


def test_an_unknown_judge_keyword_is_refused_before_any_gpu_work():
    s = engine.Session.__new__(engine.Session)  # no capture opened: the check comes first
    s._lib = type("L", (), {"need_revision": lambda self, r, w: None})()
    with pytest.raises(engine.EngineError) as e:
        s.evaluate(None, exactly=True)
    assert "exactly" in str(e.value)


def test_the_footprint_file_name_is_the_cpp_one():
    hpp = os.path.join(os.path.dirname(HPP), "..", "format", "footprint.hpp")
    if not os.path.isfile(hpp):
        pytest.skip("src/format/footprint.hpp is not in this tree")
    names = dict(re.findall(r'constexpr const char\* (k\w+) = "([^"]*)"', open(hpp).read()))
    assert names["kFootprintJson"] == engine.FOOTPRINT_JSON


def test_the_serve_protocol_version_is_the_cpp_one():
    hpp = os.path.join(os.path.dirname(HPP), "..", "serve", "protocol.hpp")
    if not os.path.isfile(hpp):
        pytest.skip("src/serve/protocol.hpp is not in this tree")
    m = re.search(r"constexpr int kServeVersion = (\d+);", open(hpp).read())
    assert m and int(m.group(1)) == engine.SERVE_PROTOCOL
