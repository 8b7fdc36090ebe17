"""The import closure of SGLang's server (buildctl.import_closure) against what an amd serve cell installs.

The walker is checked on small packages written here (one per kind of guard SGLang uses), then on the
pinned SGLang sdist from PyPI (-m pypi): the closure for HIP holds the modules the review found missing
from the image (dill, compressed_tensors, gguf, einops, jsonschema) and none of the CUDA- or NPU-only
ones; a resolution that lacks one of them is refused naming the module and its importer, read from the
real wheels' file lists (buildctl.wheel_contents).
"""

import ast
import textwrap
from pathlib import Path

import pytest

from buildctl.import_closure import closure, platform_truth
from buildctl.load import load_project
from buildctl.resolve import Resolution, missing_imports, pypi_files, sdist_imports
from buildctl.wheel_contents import top_level_modules, wheel_modules

ROOT = Path(__file__).resolve().parents[2]


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


def test_guards_decide_what_is_required(tmp_path):
    root = _package(tmp_path, {
        "app/__init__.py": "",
        "app/main.py": """
            import os, json
            import zmq
            from . import util
            from .sub import deep
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                import typing_only
            if _is_hip:
                import aiter
            elif _is_cuda:
                import flashinfer
            if is_npu():
                import torch_npu
            if not _is_cuda and _is_hip:
                import hip_and_not_cuda
            if os.environ.get("X"):
                import optional_by_env
            try:
                import xgrammar
            except ImportError:
                xgrammar = None
            def later():
                import in_function
            class K:
                import in_class
            if __name__ == "__main__":
                import only_as_script
            """,
        "app/util.py": "import dill\n",
        "app/sub/__init__.py": "import einops\n",
        "app/sub/deep.py": "from ..util import something\nimport gguf\n",
        "app/unreached.py": "import never\n",
    })
    found = closure(root, ["app.main"], "hip")
    assert set(found.required) == {"zmq", "aiter", "hip_and_not_cuda", "dill", "einops", "gguf", "in_class"}
    assert found.required["gguf"] == "app.sub.deep" and found.required["einops"] == "app.sub"
    assert {"optional_by_env", "xgrammar"} <= set(found.optional)
    assert not {"flashinfer", "torch_npu", "typing_only", "in_function", "only_as_script", "never"} & (
        set(found.required) | set(found.optional))
    assert "app.unreached" not in found.modules and {"app", "app.util", "app.sub", "app.sub.deep"} <= found.modules
    on_cuda = closure(root, ["app.main"], "cuda")
    assert "flashinfer" in on_cuda.required and "aiter" not in on_cuda.required


def test_platform_truth_three_valued():
    def truth(text: str, platform: str = "hip"):
        return platform_truth(ast.parse(text, mode="eval").body, platform)

    assert truth("_is_hip") is True and truth("is_cuda()") is False and truth("is_cuda_alike()") is True
    assert truth("_is_cuda or _is_hip") is True and truth("_is_cuda and use_env") is False
    assert truth("_is_hip and use_env") is None and truth("get_bool_env_var('A')") is None
    assert truth("not _is_npu") is True and truth("_is_npu", "npu") is True


def test_an_entry_without_source_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="no source for entry module app.nope"):
        closure(_package(tmp_path, {"app/__init__.py": ""}), ["app.nope"], "hip")


def test_top_level_modules_of_a_wheel_listing():
    names = ["zmq/__init__.py", "zmq/backend/cython/_zmq.abi3.so", "pyzmq.libs/libzmq.so.5",
             "pyzmq-27.1.0.dist-info/RECORD", "six.py", "_yaml.cpython-312-x86_64-linux-gnu.so",
             "foo-1.0.data/scripts/foo"]
    assert top_level_modules(names) == {"zmq", "six", "_yaml"}


@pytest.mark.pypi
def test_sglang_sdist_closure_for_hip(tmp_path):
    """The pinned SGLang's server closure, read from its sdist, for HIP."""
    sglang = load_project(ROOT).matrix.frameworks["sglang"]
    imports = dict(sdist_imports(pypi_files(sglang.pypi, sglang.version), sglang.entry_modules, tmp_path))
    assert {"dill", "compressed_tensors", "gguf", "einops", "jsonschema", "zmq", "transformers", "openai",
            "aiter", "sgl_kernel", "triton", "torch"} <= set(imports)
    assert not {"flashinfer", "deep_gemm", "torch_npu", "sgl_kernel_npu", "xgrammar"} & set(imports)


@pytest.mark.pypi
def test_a_module_no_installed_wheel_provides_is_named():
    """Real wheels' file lists: pyzmq provides zmq; dill is named as missing, with its importer; a module
    the cell builds from source (provided) is not."""
    [url] = [f["url"] for f in pypi_files("pyzmq", "27.1.0")
             if f["filename"].endswith("cp312-abi3-manylinux_2_26_x86_64.manylinux_2_28_x86_64.whl")]
    assert "zmq" in wheel_modules(url)
    resolution = Resolution("serve cell", "3.12", "2.39", (), imports=(
        ("zmq", "sglang.srt.utils.network"), ("dill", "sglang.srt.sampling.custom_logit_processor"),
        ("sgl_kernel", "sglang.srt.layers.attention.utils")), provided=("sgl_kernel", "torch"))
    problems = missing_imports(resolution, {"pyzmq": url})
    assert problems == ["serve cell: sglang.srt.sampling.custom_logit_processor imports dill, which no "
                        "distribution the image installs provides: add the distribution that provides it "
                        "(matrix.yaml runtime_deps)"]
