"""The value formatters every text output shares: one rule for durations from 1 ns to hours,
and sizes, bandwidths, percentages, counts and counter values, at their boundaries."""

from __future__ import annotations

import numpy as np
import pytest
from accelview.model.text.values import (
    MISSING,
    format_bandwidth,
    format_bytes,
    format_count,
    format_duration,
    format_number,
    format_percent,
    format_value,
    significant,
)


@pytest.mark.parametrize(("ns", "text"), [
    (0, "0 ns"), (1, "1 ns"), (12, "12 ns"), (830, "830 ns"), (999, "999 ns"),
    (12.5, "12.5 ns"), (1.26, "1.3 ns"), (999.4, "999 ns"),  # a mean: a tenth of a ns at most
    (0.04, "0 ns"),
    (999.5, "1.00 µs"), (999.96, "1.00 µs"), (1_000, "1.00 µs"),  # rounding up moves to the next unit
    (3_400, "3.40 µs"), (80_000, "80.0 µs"), (430_490, "430 µs"), (999_500, "1.00 ms"),
    (1_234_000, "1.23 ms"), (35_040_000, "35.0 ms"), (999_999_999, "1.00 s"),
    (12.3e9, "12.3 s"), (59.94e9, "59.9 s"),
    (59.96e9, "1 min 00 s"), (245e9, "4 min 05 s"), (3599.6e9, "1 h 00 min 00 s"),
    (7400e9, "2 h 03 min 20 s"), (1e18, "277777 h 46 min 40 s"),
])
def test_durations_read_with_three_significant_digits_from_ns_to_hours(ns, text):
    assert format_duration(ns) == text


def test_durations_negative_missing_and_infinite():
    assert format_duration(-3_400) == "-3.40 µs"
    assert format_duration(-245e9) == "-4 min 05 s"
    assert format_duration(-0.0) == "0 ns" and format_duration(-0.04) == "0 ns"  # no "-0"
    assert format_duration(float("nan")) == MISSING
    assert format_duration(float("inf")) == "∞" and format_duration(float("-inf")) == "-∞"


def test_durations_take_numpy_scalars_and_more_digits_for_positions():
    assert format_duration(np.int64(41_000)) == "41.0 µs"
    assert format_duration(np.float32(3_400)) == "3.40 µs"
    assert format_duration(12_345_678, 6) == "12.3457 ms"
    assert format_duration(2_000_000, 6) == "2.00000 ms"
    assert format_duration(999.4, 6) == "999.4 ns"  # ns keep one decimal whatever the digits
    assert format_duration(999.96, 6) == "1.00000 µs"
    assert format_duration(245.1234e9, 6) == "4 min 05.123 s"
    assert format_duration(1_250_000, 4) == "1.250 ms"


def test_significant_keeps_trailing_zeros_and_integer_digits():
    assert significant(3.4) == "3.40" and significant(80) == "80.0" and significant(0.5) == "0.500"
    assert significant(1474) == "1474" and significant(999.6) == "1000" and significant(9.996) == "10.0"
    assert significant(0) == "0.00" and significant(0.00123) == "0.00123"
    assert significant(1.2345, 2) == "1.2" and significant(1.26, 3, max_decimals=1) == "1.3"


def test_sizes_and_bandwidths_use_decimal_prefixes():
    assert format_bytes(0) == "0 B" and format_bytes(512) == "512 B" and format_bytes(999.5) == "1.00 kB"
    assert format_bytes(64 * 1024) == "65.5 kB" and format_bytes(1 << 20) == "1.05 MB"
    assert format_bytes(1.5e9) == "1.50 GB" and format_bytes(3e18) == "3000 PB"
    assert format_bytes(1536.5) == "1.54 kB" and format_bytes(-2048) == "-2.05 kB"
    assert format_bytes(float("nan")) == MISSING
    assert format_bandwidth(26.0e9) == "26.0 GB/s" and format_bandwidth(4.63e12) == "4.63 TB/s"
    assert format_bandwidth(12) == "12 B/s" and format_bandwidth(float("inf")) == "∞"


def test_percentages_have_fixed_decimals_so_columns_line_up():
    assert format_percent(0.575) == "57.5%" and format_percent(1) == "100.0%" and format_percent(0) == "0.0%"
    assert format_percent(0.914, 0) == "91%" and format_percent(0.0004) == "0.0%"
    assert format_percent(-0.0001) == "0.0%"  # no "-0.0%"
    assert format_percent(-0.25) == "-25.0%" and format_percent(2.5) == "250.0%"
    assert format_percent(float("nan")) == MISSING and format_percent(float("inf")) == "∞"


def test_counts_have_thousands_separators():
    assert format_count(0) == "0" and format_count(12_345) == "12,345"
    assert format_count(2**60) == "1,152,921,504,606,846,976"  # exact: never through a float
    assert format_count(np.int64(3_774)) == "3,774" and format_count(12.6) == "13"
    assert format_count(float("nan")) == MISSING


def test_counter_values_get_si_prefixes_unless_their_unit_has_one():
    assert format_value(4.63e12, "B/s") == "4.63 TB/s"
    assert format_value(57.5, "%") == "57.5%"  # a value in percent, printed like every percentage
    assert format_value(1474.0, "GB/s") == "1474 GB/s" and format_value(0.5, "GB/s") == "0.500 GB/s"
    assert format_value(12.0, "B") == "12 B" and format_value(12.5, "B") == "12.5 B"
    assert format_value(2.5e9, "cycles") == "2.50 Gcycles" and format_value(3.0) == "3"
    assert format_value(float("nan"), "B") == MISSING


def test_argument_numbers_keep_their_digits():
    assert format_number(2.5e12) == "2,500,000,000,000" and format_number(1 << 20) == "1,048,576"
    assert format_number(0.5) == "0.5" and format_number(1 / 3) == "0.333333"
    assert format_number(True) == "True" and format_number("H2D") == "H2D"
