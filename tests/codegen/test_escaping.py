"""The one string-literal escaper of each generated language, and the identifier sanitiser:
any text comes back exactly, as printable ASCII that no decoding or trigraph can change."""

from __future__ import annotations

import ast
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swimlanes.codegen import CodegenError, cpp_string_literal, python_string_literal
from swimlanes.codegen.plan import checked_int, float_literal, identifier, rounded_int

#: Any str, lone surrogates included (hypothesis leaves them out of st.text() by default).
ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=80)

HOSTILE = [
    "",
    "plain label",
    "coding: unicode_escape ' and __import__('os').system('touch pwned') or '",
    "coding: unicode_escape \" ' and __import__('os').system('touch pwned') or '",
    "# -*- coding: utf-16 -*-",
    "'",
    '"',
    '"""',
    "'''",
    "\\",
    "\\'",
    "\\x41\\u0041\\N{BULLET}",
    "\n",
    "\r\n",
    "\x00",
    "\x00\x01\x7f\x80\xff",
    "\u2028\u2029\x85\ufeff",
    "\ud800",
    "\udfff\ud800",
    "\U0001f600",
    "caf\u00e9 \u00b5s",
    "??/",
    "??=??'??(??)??!??<??>??-",
    "???/",
    "?\\?",
    "a?",
    "*/ /* //",
    "// tail\\",
    "{x}{{}}",
    "%s%n",
    "\\0\\1\\101\\x41",
    "\x01" + "7",  # an octal escape then a digit
    "\x1b" + "f",  # a hex-looking letter after an escaped byte
    "x" * 5000,
]

_PRINTABLE = re.compile(r"[ -~]*")


@given(ANY_TEXT)
@settings(max_examples=400)
def test_python_literal_round_trips_any_text_as_printable_ascii(text: str) -> None:
    lit = python_string_literal(text)
    assert _PRINTABLE.fullmatch(lit)
    assert ast.literal_eval(lit) == text
    body = lit[1:-1]
    assert lit[0] == lit[-1] == "'" and "'" not in body and '"' not in body


@pytest.mark.parametrize("text", HOSTILE)
def test_python_literal_of_hostile_text(text: str) -> None:
    lit = python_string_literal(text)
    assert _PRINTABLE.fullmatch(lit) and ast.literal_eval(lit) == text
    # read as a whole file's single statement, from bytes, as Python reads files
    tree = ast.parse(f"x = {lit}\n".encode("ascii"))
    assert tree.body[0].value.value == text  # type: ignore[attr-defined]


def _cpp_decode(lit: str) -> bytes:
    """A reference decoder for the escapes cpp_string_literal writes."""
    assert lit[0] == lit[-1] == '"'
    out, i, body = bytearray(), 0, lit[1:-1]
    while i < len(body):
        if body[i] == "\\":
            if body[i + 1] in '"\\?':
                out += body[i + 1].encode()
                i += 2
            else:
                assert re.fullmatch(r"[0-7]{3}", body[i + 1 : i + 4]), body[i:]
                out.append(int(body[i + 1 : i + 4], 8))
                i += 4
        else:
            assert body[i] not in '"?', body
            out += body[i].encode("ascii")
            i += 1
    return bytes(out)


@given(ANY_TEXT)
@settings(max_examples=400)
def test_cpp_literal_holds_the_utf8_bytes_as_printable_ascii(text: str) -> None:
    lit = cpp_string_literal(text)
    assert _PRINTABLE.fullmatch(lit)
    assert "??" not in lit  # no trigraph can form
    assert _cpp_decode(lit) == text.encode("utf-8", "surrogatepass")


def _cpp_round_trip(texts: list[str], std: str, tmp_path: Path) -> list[bytes]:
    """Compile the literals of ``texts`` with g++ (warnings are errors: -Wtrigraphs included),
    run the program and read back each literal's bytes."""
    lits = [cpp_string_literal(t) for t in texts]
    src = tmp_path / f"lits_{std}.cpp"
    src.write_text(
        "#include <cstdio>\n"
        "static const char* const kText[] = {\n"
        + "".join(f"    {lit},\n" for lit in lits)
        + "};\nstatic const unsigned long kSize[] = {\n"
        + "".join(f"    sizeof({lit}) - 1,\n" for lit in lits)
        + "};\n"
        "int main() {\n"
        "    for (unsigned long i = 0; i < sizeof(kSize) / sizeof(kSize[0]); ++i) {\n"
        "        for (unsigned long j = 0; j < kSize[i]; ++j)\n"
        '            std::printf("%02x", (unsigned)(unsigned char)kText[i][j]);\n'
        '        std::printf("\\n");\n'
        "    }\n"
        "    return 0;\n"
        "}\n",
        encoding="ascii",
    )
    exe = tmp_path / f"lits_{std}"
    build = subprocess.run(
        ["g++", f"-std={std}", "-Wall", "-Wextra", "-Wtrigraphs", "-Werror", "-o", exe, src],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert build.returncode == 0, build.stderr
    out = subprocess.run([exe], capture_output=True, text=True, timeout=60, check=True)
    return [bytes.fromhex(line) for line in out.stdout.split("\n")[: len(texts)]]


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")
@pytest.mark.parametrize("std", ["c++14", "c++17"])
def test_cpp_literals_round_trip_through_gxx(std: str, tmp_path: Path) -> None:
    rng = random.Random(5)
    texts = list(HOSTILE)
    alphabet = "?/\\\"'*=()!<>-01789abfx\n\r\x00 "
    for _ in range(150):  # dense in ?, backslashes, digits: trigraphs and escapes running on
        texts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))))
    for _ in range(100):
        texts.append("".join(chr(rng.randint(0, 0x10FFFF)) for _ in range(rng.randint(1, 6))))
    got = _cpp_round_trip(texts, std, tmp_path)
    assert got == [t.encode("utf-8", "surrogatepass") for t in texts]


@given(st.text(max_size=60), st.sampled_from(["stream", "event"]))
def test_identifiers_are_plain_and_never_reserved(text: str, prefix: str) -> None:
    ident = identifier(text, prefix)
    assert re.fullmatch(rf"{prefix}_[A-Za-z0-9]+(_[A-Za-z0-9]+)*", ident)
    assert "__" not in ident and len(ident) <= len(prefix) + 41


def test_numbers_that_do_not_fit_are_refused_with_their_place() -> None:
    assert checked_int(2**63 - 1, "x") == 2**63 - 1
    with pytest.raises(CodegenError, match=r"program\[3\]\.bytes: .*at most"):
        checked_int(10**60, "program[3].bytes")
    with pytest.raises(CodegenError, match="bit number"):
        checked_int(10**4400, "program[0].bytes")  # past str()'s digit limit
    with pytest.raises(CodegenError, match="not an integer"):
        checked_int(True, "x")
    with pytest.raises(CodegenError, match="finite"):
        rounded_int(float("inf"), "x")
    assert float_literal(1e16, "x") == "1e+16" and float_literal(5, "x") == "5.0"
    with pytest.raises(CodegenError, match="too large"):
        float_literal(10**4400, "program[0].duration_us")
    with pytest.raises(CodegenError, match="finite"):
        float_literal(float("nan"), "x")
