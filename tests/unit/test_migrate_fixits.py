"""clang's narrowing casts (migrate/fixits.py): read from hipcc 7.2.4's own diagnostics and written at
the user's line. The compiler outputs below are hipcc's, verbatim but for the file's path (dev image,
`hipcc -c -x hip --offload-arch=gfx942 -w -fdiagnostics-parseable-fixits`), on torch-harmonics
0.8.1's attention_cuda_fwd.cu line, a template case and a std::vector return."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "recipes" / "migrate"))

from migrate import fixits  # noqa: E402

# torch-harmonics 0.8.1 torch_harmonics/attention/csrc/attention_cuda_fwd.cu:555 (nchans_out is size_t)
SOURCE = """#include <cstdint>
#include <cstddef>
#include <vector>
int64_t first(size_t nchans_out, int64_t batch_size) {
    int64_t out_dims[] = {batch_size, nchans_out, 4};
    return out_dims[1];
}
template <typename T> int64_t second(T c) { std::vector<int64_t> v = {c + 1, 2}; return v[0]; }
int64_t third() { return second<size_t>(3) + second<unsigned>(4); }
"""

OUTPUT = """{f}:5:39: error: non-constant-expression cannot be narrowed from type 'size_t' (aka 'unsigned long') to 'int64_t' (aka 'long') in initializer list [-Wc++11-narrowing]
    5 |     int64_t out_dims[] = {{batch_size, nchans_out, 4}};
      |                                       ^~~~~~~~~~
{f}:5:39: note: insert an explicit cast to silence this issue
    5 |     int64_t out_dims[] = {{batch_size, nchans_out, 4}};
      |                                       ^~~~~~~~~~
      |                                       static_cast<int64_t>( )
fix-it:"{f}":{{5:39-5:39}}:"static_cast<int64_t>("
fix-it:"{f}":{{5:49-5:49}}:")"
{f}:8:71: error: non-constant-expression cannot be narrowed from type 'unsigned long' to 'value_type' (aka 'long') in initializer list [-Wc++11-narrowing]
    8 | template <typename T> int64_t second(T c) {{ std::vector<int64_t> v = {{c + 1, 2}}; return v[0]; }}
      |                                                                       ^~~~~
{f}:9:26: note: in instantiation of function template specialization 'second<unsigned long>' requested here
    9 | int64_t third() {{ return second<size_t>(3) + second<unsigned>(4); }}
      |                          ^
{f}:8:71: note: insert an explicit cast to silence this issue
    8 | template <typename T> int64_t second(T c) {{ std::vector<int64_t> v = {{c + 1, 2}}; return v[0]; }}
      |                                                                       ^~~~~
      |                                                                       static_cast<value_type>( )
fix-it:"{f}":{{8:71-8:71}}:"static_cast<value_type>("
fix-it:"{f}":{{8:76-8:76}}:")"
2 errors generated when compiling for gfx942.
"""


def test_the_cast_goes_where_clang_puts_it_with_the_written_element_type(tmp_path):
    path = tmp_path / "torch" / "attention_hip_fwd.hip"
    path.parent.mkdir()
    path.write_text(SOURCE)
    output = OUTPUT.format(f=path) * 2  # one copy per offload arch
    casts = fixits.narrowing_casts(output, str(tmp_path / "torch"))
    assert [(c.line, c.col, c.text) for c in casts] == [(5, 39, "static_cast<int64_t>("), (5, 49, ")")]
    assert fixits.apply(casts) == [(str(path.resolve()), 5)]
    lines = path.read_text().split("\n")
    assert lines[4] == "    int64_t out_dims[] = {batch_size, static_cast<int64_t>(nchans_out), 4};"
    assert lines[7] == SOURCE.split("\n")[7]  # value_type means nothing at the user's line: left alone


def test_files_outside_the_migrated_tree_and_other_errors_are_left(tmp_path):
    path = tmp_path / "a.hip"
    path.write_text(SOURCE)
    assert fixits.narrowing_casts(OUTPUT.format(f=path), str(tmp_path / "torch")) == []
    constant = (f"{path}:5:39: error: constant expression evaluates to -1 which cannot be narrowed to type "
                f"'size_t' (aka 'unsigned long') [-Wc++11-narrowing]\nfix-it:\"{path}\":{{5:39-5:39}}:\"static_cast<size_t>(\"\n"
                f"fix-it:\"{path}\":{{5:41-5:41}}:\")\"\n")
    assert fixits.narrowing_casts(constant, str(tmp_path)) == []


def test_a_typedef_target_outside_a_template_takes_the_canonical_type(tmp_path):
    path = tmp_path / "b.hip"
    path.write_text("#include <vector>\n#include <cstddef>\nstd::vector<long> f(size_t n) { return {n}; }\n")
    output = (f"{path}:3:41: error: non-constant-expression cannot be narrowed from type 'size_t' (aka 'unsigned long') "
              f"to 'value_type' (aka 'long') in initializer list [-Wc++11-narrowing]\n"
              f"{path}:3:41: note: insert an explicit cast to silence this issue\n"
              f"fix-it:\"{path}\":{{3:41-3:41}}:\"static_cast<value_type>(\"\nfix-it:\"{path}\":{{3:42-3:42}}:\")\"\n")
    casts = fixits.narrowing_casts(output, str(tmp_path))
    fixits.apply(casts)
    assert path.read_text().split("\n")[2] == "std::vector<long> f(size_t n) { return {static_cast<long>(n)}; }"
