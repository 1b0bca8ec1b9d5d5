"""Sizes read the same in the editor, the charts and generated code."""

from swimlanes.units import best_unit, format_bytes


def test_format_bytes_picks_the_largest_unit_and_four_digits() -> None:
    assert format_bytes(64 * 1024 * 1024) == "64 MiB"
    assert format_bytes(412_500_000) == "393.4 MiB"
    assert format_bytes(3 * (1 << 29)) == "1.5 GiB"
    assert format_bytes(512) == "512 B"
    assert best_unit(1536) == (1.5, "KiB")
