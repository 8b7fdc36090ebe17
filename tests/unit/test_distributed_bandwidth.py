"""busbw/algbw arithmetic against nccl-tests' definitions (doc/PERFORMANCE.md) and size parsing."""

import pytest

from recipes.distributed import bandwidth as bw


def test_allreduce_bus_factor_is_2_n_minus_1_over_n():
    assert bw.bus_factor("all_reduce", 2) == 1.0
    assert bw.bus_factor("all_reduce", 8) == pytest.approx(1.75)
    assert bw.bus_factor("all_reduce", 1) == 0.0
    assert bw.bus_factor("all_gather", 4) == pytest.approx(0.75)


def test_algbw_and_busbw_in_gb_per_s():
    # 1 GiB in 0.5 s on 4 ranks: algbw = 2.147 GB/s, busbw = algbw * 1.5
    assert bw.algbw_gbps(1 << 30, 0.5) == pytest.approx(2.147483648)
    assert bw.busbw_gbps(1 << 30, 0.5, 4) == pytest.approx(2.147483648 * 1.5)


def test_sizes_8_bytes_to_1_gib():
    sizes = bw.message_sizes(bw.parse_size("8"), bw.parse_size("1G"))
    assert sizes[0] == 8 and sizes[-1] == 1 << 30 and len(sizes) == 28


@pytest.mark.parametrize("text, value", [("8", 8), ("64K", 65536), ("1M", 1 << 20), ("1GiB", 1 << 30), ("2g", 2 << 30)])
def test_parse_size(text, value):
    assert bw.parse_size(text) == value


@pytest.mark.parametrize("text", ["", "0", "-8", "1T", "abc", "1.5M"])
def test_parse_size_rejects_with_flag_name(text):
    with pytest.raises(ValueError, match="--max-bytes"):
        bw.parse_size(text, "--max-bytes")


def test_bad_series_and_collective_rejected():
    with pytest.raises(ValueError, match="--min-bytes"):
        bw.message_sizes(1024, 8)
    with pytest.raises(ValueError, match="--factor"):
        bw.message_sizes(8, 64, 1)
    with pytest.raises(ValueError, match="allowed"):
        bw.bus_factor("alltoallv", 2)


def test_row_has_nccl_tests_columns():
    cols = bw.format_row(1 << 20, 4, "float", 1e-3, 2).split()
    assert cols[:4] == [str(1 << 20), str(1 << 18), "float", "sum"]
    assert float(cols[4]) == pytest.approx(1000.0)
    assert float(cols[5]) == pytest.approx(1.049, abs=1e-3) and float(cols[6]) == pytest.approx(1.049, abs=1e-3)
