"""Error signatures: the status names and error classes a log line carries, normalised for matching.

A signature is ``kind:key``: ``hip:hiperrornobinaryforgpu``, ``hsa:hsa_status_error_out_of_resources``,
``pyexc:runtimeerror:no hip gpus are available``, ``lib:libamdhip64.so``, ``compiler:use of undeclared
identifier``, ``kernel:amdgpu: ring gfx timeout``. Numbers, hex addresses, paths and quoted names are
normalised away (header and library names are kept: they name the fault), so two reports of one fault
on other machines give the same signature. The kinds follow the GPU stack's own vocabularies: HIP
(``hipError_t`` names), ROCr (``hsa_status_t``), hipBLAS/rocBLAS/hipBLASLt/MIOpen/RCCL statuses, NCCL
``WARN`` lines, clang/gcc diagnostics, the linker, pip's resolver, apt, CMake, Python exceptions,
the kernel log (amdgpu, kfd, drm) and fatal signals.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from buildctl.doctor.literals import TextIndex, required_literals

_HEX = re.compile(r"\b0x[0-9a-f]+\b")
_PCI = re.compile(r"\b(?:[0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]:?")
_PATH = re.compile(r"(?:[a-z]:)?(?:[\w.+~-]*/)+([\w.+-]+)")
_NUM = re.compile(r"\d+(?:\.\d+)*")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`']*'|‘[^’]*’")
_KEEP_QUOTED = re.compile(r"\.(?:h|hpp|cuh|hh|inc|so)\b|^['\"]?lib")
_SPACE = re.compile(r"[^\w:#.+<>-]+")
_TIMESTAMP = re.compile(r"^\s*(?:\[\s*\d+\.\d+\]\s*|\S+ \d\d:\d\d:\d\d\S*\s+|\d{4}-\d\d-\d\d[ t][\d:.,]+\s*)")
MAX_KEY_WORDS = 8
# Diagnostics whose only distinguishing part is the name they quote (normalised away): one of these says
# "the compiler or Python rejected something", not which fault it is. Signal and timeout signatures are
# as unspecific. Weak signatures still count in the similarity text; they cannot report an entry alone.
_WEAK_KINDS = frozenset({"signal", "timeout"})
_WEAK_MESSAGE = re.compile(
    r"^(?:use of undeclared identifier|no matching (?:function|constructor|member function) for call to|"
    r"unknown type name|no member named|call to .* is ambiguous|expected |cannot convert|invalid operands|"
    r"command .* failed with exit code|process completed with exit code|static assertion failed|"
    r"no viable conversion|too (?:few|many) arguments|redefinition of|conflicting types|"
    r"subprocess-exited-with-error|failed building)"
)


@dataclass(frozen=True)
class Signature:
    """One signature found on a log line (``line`` is the 1-based number in the original log)."""

    kind: str
    key: str
    line: int
    text: str

    @property
    def token(self) -> str:
        """``kind:key``, the form entries and the similarity index compare."""
        return f"{self.kind}:{self.key}"

    @property
    def weak(self) -> bool:
        """True for a signature that names no fault by itself (see _WEAK_MESSAGE)."""
        return is_weak(self.token)


def is_weak(token: str) -> bool:
    """True when the signature ``token`` (``kind:key``) is a signal, a timeout or a generic diagnostic whose
    quoted name was normalised away (``compiler:use of undeclared identifier _``)."""
    kind, _, key = token.partition(":")
    if kind in _WEAK_KINDS:
        return True
    if kind == "pyexc":
        key = key.partition(":")[2]
    return _WEAK_MESSAGE.search(key) is not None


def normalise(message: str, words: int = MAX_KEY_WORDS) -> str:
    """A message with machine-specific parts replaced: lower case, quoted names as ``'_'`` (header and
    library names kept), paths cut to their last part, numbers as ``#``, at most ``words`` words."""
    text = _PCI.sub(" ", message.lower())
    text = _QUOTED.sub(lambda m: m.group(0) if _KEEP_QUOTED.search(m.group(0)) else "'_'", text)
    text = _HEX.sub("#", text)
    text = _PATH.sub(lambda m: m.group(1), text)
    text = _NUM.sub("#", text)
    return " ".join(_SPACE.sub(" ", text).split()[:words]).strip(" :.-")


# hipGetErrorString's messages (HIP runtime, hip_error.cpp; the same strings as CUDA's) -> the hipError_t
# name, so "HIP error: invalid device function" and "hipErrorInvalidDeviceFunction" are one signature.
HIP_ERROR_BY_MESSAGE = {
    "invalid argument": "hiperrorinvalidvalue",
    "out of memory": "hiperroroutofmemory",
    "invalid device ordinal": "hiperrorinvaliddevice",
    "invalid device function": "hiperrorinvaliddevicefunction",
    "no kernel image is available for execution on the device": "hiperrornobinaryforgpu",
    "invalid resource handle": "hiperrorinvalidhandle",
    "unspecified launch failure": "hiperrorlaunchfailure",
    "an illegal memory access was encountered": "hiperrorillegaladdress",
    "invalid configuration argument": "hiperrorinvalidconfiguration",
    "too many resources requested for launch": "hiperrorlaunchoutofresources",
    "shared object initialization failed": "hiperrorsharedobjectinitfailed",
    "operation not supported": "hiperrornotsupported",
    "operation not permitted when stream is capturing": "hiperrorstreamcaptureunsupported",
    "no rocm-capable device is detected": "hiperrornodevice",
}


def _hip_message(m: re.Match[str]) -> str:
    message = " ".join(m.group(1).lower().split()).rstrip(" .")
    return HIP_ERROR_BY_MESSAGE.get(message) or normalise(m.group(1), 6)


def _lib(m: re.Match[str]) -> str:
    name = m.group(1).lower()
    return re.sub(r"(\.so)(\.[\d.]+)?$", r"\1", name)


# (kind, pattern, key from the match). Patterns are searched case-insensitively on each line.
_RULES: tuple[tuple[str, re.Pattern[str], Callable[[re.Match[str]], str]], ...] = tuple(
    (kind, re.compile(rx, re.IGNORECASE), key)
    for kind, rx, key in (
        ("hip", r"\b(hipError[A-Z]\w+)", lambda m: m.group(1).lower()),
        ("hip", r"\bHIP error: ([a-z][\w -]{3,60})", _hip_message),
        ("hsa", r"\b(HSA_STATUS_[A-Z_]+)", lambda m: m.group(1).lower()),
        ("blas", r"\b((?:HIPBLAS|ROCBLAS|HIPBLASLT|CUBLAS|HIPSPARSE|ROCSOLVER|HIPFFT)_STATUS_[A-Z_]+)",
         lambda m: m.group(1).lower()),
        ("blas", r"\b(rocblas_status_\w+)", lambda m: m.group(1).lower()),
        ("miopen", r"\b(miopenStatus\w+)", lambda m: m.group(1).lower()),
        ("miopen", r"\bMIOpen(?:\(HIP\))?: (?:Error|Warning) \[[^\]]*\] (.{8,})", lambda m: normalise(m.group(1), 6)),
        ("nccl", r"\b(nccl(?:Unhandled\w*|System|Internal|InvalidUsage|InvalidArgument|Remote)Error)\b",
         lambda m: m.group(1).lower()),
        ("nccl", r"\bNCCL WARN (.{6,})", lambda m: normalise(m.group(1), 6)),
        ("lib", r"\b(lib[\w+-]+\.so(?:\.[\d.]+)?): cannot open shared object file", _lib),
        ("lib", r"\bundefined symbol: (\w{4,})", lambda m: "undefined symbol " + m.group(1)[:40].lower()),
        ("linker", r"undefined reference to [`'](\w+)", lambda m: "undefined reference " + m.group(1)[:40].lower()),
        ("header", r"(?:fatal error: |error: )['\"]?([\w./+-]+\.(?:h|hpp|cuh|hh|inc))['\"]? file not found",
         lambda m: m.group(1).rsplit("/", 1)[-1].lower()),
        ("header", r"fatal error: ([\w./+-]+\.(?:h|hpp|cuh|hh)): No such file", lambda m: m.group(1).rsplit("/", 1)[-1].lower()),
        ("compiler", r"\S+:\d+(?::\d+)?: (?:fatal )?error: (?!\S+ file not found)(.{6,})",
         lambda m: normalise(m.group(1), 6)),
        ("error", r"^(?:\S+: )?(?:fatal )?error: (?!\S+ file not found)(?!linker command)(.{6,})",
         lambda m: normalise(m.group(1), 6)),
        ("compiler", r"\b(clang|lld|ld\.lld)(?:\+\+)?: error: (.{6,})", lambda m: m.group(1).lower() + " " + normalise(m.group(2), 5)),
        ("compiler", r"(unsupported|unknown|invalid) (?:target|offload|gpu) (?:id|arch(?:itecture)?|cpu)",
         lambda m: normalise(m.group(0))),
        ("pip", r"\b(ResolutionImpossible|subprocess-exited-with-error|externally-managed-environment)\b",
         lambda m: m.group(1).lower()),
        ("pip", r"Could not find a version that satisfies the requirement ([\w.-]+)",
         lambda m: "no version satisfies " + m.group(1).lower()),
        ("pip", r"No matching distribution found for ([\w.-]+)", lambda m: "no matching distribution " + m.group(1).lower()),
        ("pip", r"Failed (?:to )?build(?:ing)? (?:wheel for )?([\w.-]+)", lambda m: "failed building " + m.group(1).lower()),
        ("pip", r"(\S+) requires ([\w.-]+)[^,]*, but you have ([\w.-]+)", lambda m: "requires " + m.group(2).lower()),
        ("apt", r"\b(NO_PUBKEY|EXPKEYSIG|KEYEXPIRED)\b", lambda m: m.group(1).lower()),
        ("apt", (r"^E: (Unable to locate package|Package '.*' has no installation candidate|"
                 r"Unable to correct problems|Release file for .* is expired|Failed to fetch)"),
         lambda m: normalise(m.group(1), 5)),
        ("apt", (r"\b(Temporary failure resolving|Could not resolve|Could not connect to|Connection timed out|"
                 r"Hash Sum mismatch|held broken packages|unmet dependencies|Unable to connect to)"),
         lambda m: m.group(1).lower()),
        ("cmake", r"CMake Error(?: at [^:]+)?:?\s*(.*)", lambda m: normalise(m.group(1), 5) or "cmake error"),
        ("cmake", r"Could NOT find (\w+)", lambda m: "could not find " + m.group(1).lower()),
        ("cmake", r'package configuration file provided by\s+"(\w+)"', lambda m: "no config " + m.group(1).lower()),
        ("pyexc", r"^(?:E\s+)?(?:[\w]+\.)*(\w*(?:Error|Exception|Interrupt|Failure))(?::\s*(.*))?$",
         lambda m: m.group(1).lower() + (":" + normalise(m.group(2), 6) if m.group(2) else "")),
        ("kernel", (r"\b(amdgpu|kfd|drm)\b(?: (?:[0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])?[^:]*?:\s*"
                    r"(?:(?:amdgpu|kfd): )?(?:\[[^\]]*\]\s*)?(.*(?:error|fail|fault|timeout|hang|reset|"
                    r"not supported|denied|invalid|bug|unable|lost).*)"),
         lambda m: m.group(1).lower() + ": " + normalise(m.group(2), 6)),
        ("gpu", (r"(Memory access fault by GPU|GPU Hang|page fault|gpu hang|queue evict|Xid|"
                 r"hipMalloc.*out of memory|HIP out of memory)"), lambda m: normalise(m.group(1))),
        ("signal", (r"\b(Segmentation fault|Aborted|Illegal instruction|Bus error|Floating point exception|"
                    r"Killed|core dumped|signal \d+|SIGSEGV|SIGABRT|SIGKILL|exit code -?(?:9|11|6|139|137|134))\b"),
         lambda m: normalise(m.group(1))),
        ("docker", (r"(could not select device driver|error gathering device information|no space left on device|"
                    r"permission denied while trying to connect to the docker|error during container init|"
                    r"operation not permitted)"), lambda m: m.group(1).lower()),
        ("perm", (r"(/dev/(?:kfd|dri\S*)).*(permission denied|no such file|operation not permitted)|"
                  r"(permission denied|no such file|operation not permitted).*(/dev/(?:kfd|dri\S*))"),
         lambda m: normalise(m.group(0), 6)),
        ("timeout", r"(watchdog caught collective operation timeout|timed out|timeout)", lambda m: m.group(1).lower()),
    )
)


# Per rule, the strings one of which a line must hold for the rule to hit (None: try every line).
_RULE_LITERALS = tuple(required_literals(rx.pattern) for _, rx, _ in _RULES)


def extract(lines: Sequence[str], numbers: Sequence[int] | None = None,
            index: TextIndex | None = None) -> list[Signature]:
    """Signatures of ``lines`` in line order, each kind:key once per line. ``numbers`` are the lines'
    1-based numbers in the original log (default 1, 2, ...); ``index`` a TextIndex of ``lines`` when the
    caller has one."""
    index = index or TextIndex(lines)
    per_line: dict[int, list[int]] = {}
    for r, lits in enumerate(_RULE_LITERALS):
        for i in (range(len(lines)) if lits is None else index.lines_with(lits)):
            per_line.setdefault(i, []).append(r)
    out: list[Signature] = []
    for i in sorted(per_line):
        line = _TIMESTAMP.sub("", lines[i]).strip()
        if len(line) < 4:
            continue
        number = numbers[i] if numbers is not None else i + 1
        seen: set[str] = set()
        for r in per_line[i]:
            kind, rx, key = _RULES[r]
            m = rx.search(line)
            if not m:
                continue
            value = key(m)
            if value and f"{kind}:{value}" not in seen:
                seen.add(f"{kind}:{value}")
                out.append(Signature(kind, value, number, line))
    return out
