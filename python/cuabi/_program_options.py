# SPDX-License-Identifier: Apache-2.0
"""NVRTC options as typed fields: :class:`ProgramOptions`.

``Program.compile`` takes one of these or the plain list of option strings
NVRTC reads; ``ProgramOptions(...).as_list()`` is that list.  Every option of
CUDA 13.0's nvrtc.h that a user sets has a field, except ``--optix-ir`` (its
output is for OptiX only, which cuabi does not load; ``extra`` still passes
it).  Only the fields that are set become options, so the defaults are
NVRTC's own; the list comes out in the order of the table ``_FIELDS`` below
(nvrtc.h's order), whatever order the fields were given in, so equal options
give equal lists (the program cache's key relies on it).

Each field is checked when the object is made and again by ``as_list()``
(a dataclass can be changed after it is made): a value of the wrong type
raises ``TypeError`` and a value NVRTC does not know raises ``ValueError``,
both naming the field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

Macros = Union[Sequence[str], Dict[str, Optional[str]]]

_ARCH = re.compile(r"(sm|compute)_[0-9]{2,3}[af]?\Z")
_STDS = ("c++03", "c++11", "c++14", "c++17", "c++20")
_FAST_COMPILE = ("0", "min", "mid", "max")
_OPT_INFO = ("inline",)


def _flag(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError("ProgramOptions.%s must be True or False, got %r" % (what, value))
    return value


def _strings(value: object, what: str) -> List[str]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise TypeError("ProgramOptions.%s must be a list of str, got %r" % (what, value))
    for v in value:
        if not isinstance(v, str) or not v:
            raise TypeError("ProgramOptions.%s must hold non-empty str, got %r" % (what, v))
    return list(value)


def _text(value: object, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError("ProgramOptions.%s must be a non-empty str, got %r" % (what, value))
    return value


def _int(value: object, what: str, low: int, high: Optional[int]) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("ProgramOptions.%s must be an int, got %r" % (what, value))
    if value < low or (high is not None and value > high):
        raise ValueError("ProgramOptions.%s must be an int in [%d, %s], got %r"
                         % (what, low, "..." if high is None else high, value))
    return value


def _choice(value: object, what: str, choices: Tuple[str, ...]) -> str:
    if not isinstance(value, str):
        raise TypeError("ProgramOptions.%s must be a str, one of %s, got %r" % (what, ", ".join(choices), value))
    if value not in choices:
        raise ValueError("ProgramOptions.%s must be one of %s, got %r" % (what, ", ".join(choices), value))
    return value


def _macros(value: object) -> List[str]:
    if isinstance(value, dict):
        out = []
        for k, v in value.items():
            if not isinstance(k, str) or not k or (v is not None and not isinstance(v, str)):
                raise TypeError("ProgramOptions.define_macro must map non-empty str names to str or None, "
                                "got %r: %r" % (k, v))
            out.append("-D%s" % k if v is None else "-D%s=%s" % (k, v))
        return out
    return ["-D" + m for m in _strings(value, "define_macro")]


# (field, kind, option, what the kind needs).  Kinds:
#   switch   bool: the option when True, nothing when False
#   tf       Optional[bool]: OPTION=true / OPTION=false, nothing when None
#   int      Optional[int] in [low, high]: OPTION=N
#   choice   Optional[str], one of the given: OPTION=VALUE
#   text     Optional[str]: OPTION=VALUE
#   list     list of str: OPTION+VALUE, one each
#   numbers  list of int >= 0: OPTION=N,N,...
#   onoff    Optional[bool]: the first option when True, the second when False
_FIELDS: Tuple[Tuple[str, str, Any, Any], ...] = (
    ("arch", "arch", "-arch=", None),
    ("relocatable_device_code", "tf", "--relocatable-device-code", None),
    ("extensible_whole_program", "switch", "-ewp", None),
    ("device_debug", "switch", "-G", None),
    ("lineinfo", "switch", "-lineinfo", None),
    ("device_optimize", "switch", "--dopt=on", None),
    ("fast_compile", "choice", "--Ofast-compile", _FAST_COMPILE),
    ("ptxas_options", "list", "--ptxas-options=", None),
    ("max_register_count", "int", "--maxrregcount", (1, None)),
    ("ftz", "tf", "--ftz", None),
    ("prec_sqrt", "tf", "--prec-sqrt", None),
    ("prec_div", "tf", "--prec-div", None),
    ("fmad", "tf", "--fmad", None),
    ("use_fast_math", "switch", "--use_fast_math", None),
    ("extra_device_vectorization", "switch", "--extra-device-vectorization", None),
    ("modify_stack_limit", "tf", "--modify-stack-limit", None),
    ("link_time_optimization", "switch", "-dlto", None),
    ("gen_opt_lto", "switch", "--gen-opt-lto", None),
    ("jump_table_density", "int", "--jump-table-density", (0, 101)),
    ("device_stack_protector", "tf", "--device-stack-protector", None),
    ("no_cache", "switch", "--no-cache", None),
    ("random_seed", "text", "--frandom-seed", None),
    ("define_macro", "macros", "-D", None),
    ("undefine_macro", "list", "-U", None),
    ("include_path", "list", "-I", None),
    ("pre_include", "list", "--pre-include=", None),
    ("no_source_include", "switch", "-no-source-include", None),
    ("std", "choice", "-std", _STDS),
    ("builtin_move_forward", "tf", "--builtin-move-forward", None),
    ("builtin_initializer_list", "tf", "--builtin-initializer-list", None),
    ("pch", "switch", "--pch", None),
    ("create_pch", "text", "--create-pch", None),
    ("use_pch", "text", "--use-pch", None),
    ("pch_dir", "text", "--pch-dir", None),
    ("pch_verbose", "tf", "--pch-verbose", None),
    ("pch_messages", "tf", "--pch-messages", None),
    ("instantiate_templates_in_pch", "tf", "--instantiate-templates-in-pch", None),
    ("disable_warnings", "switch", "-w", None),
    ("restrict", "switch", "-restrict", None),
    ("device_as_default_execution_space", "switch", "-default-device", None),
    ("device_int128", "switch", "-device-int128", None),
    ("device_float128", "switch", "-device-float128", None),
    ("optimization_info", "choice", "-opt-info", _OPT_INFO),
    ("display_error_number", "onoff", ("--display-error-number", "--no-display-error-number"), None),
    ("diag_error", "numbers", "--diag-error", None),
    ("diag_suppress", "numbers", "--diag-suppress", None),
    ("diag_warn", "numbers", "--diag-warn", None),
    ("brief_diagnostics", "tf", "--brief-diagnostics", None),
    ("time", "text", "--time", None),
    ("split_compile", "int", "--split-compile", (0, None)),
    ("device_syntax_only", "switch", "--fdevice-syntax-only", None),
    ("minimal", "switch", "--minimal", None),
    ("device_time_trace", "text", "--fdevice-time-trace", None),
    ("extra", "extra", None, None),
)


def _render(name: str, kind: str, option: Any, spec: Any, value: Any) -> List[str]:
    """The option strings of one field's value (checked)."""
    if kind == "switch":
        return [option] if _flag(value, name) else []
    if kind == "list":
        return [option + v for v in _strings(value, name)]
    if kind == "macros":
        return _macros(value)
    if kind == "extra":
        return _strings(value, name)
    if kind == "numbers":
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            raise TypeError("ProgramOptions.%s must be a list of int, got %r" % (name, value))
        numbers = [_int(v, name, 0, None) for v in value]
        return ["%s=%s" % (option, ",".join("%d" % n for n in numbers))] if numbers else []
    if value is None:
        return []
    if kind == "arch":
        if not isinstance(value, str):
            raise TypeError("ProgramOptions.arch must be a str like 'sm_90', got %r" % (value,))
        if not _ARCH.match(value):
            raise ValueError("ProgramOptions.arch must look like 'sm_90', 'sm_90a' or 'compute_90', got %r"
                             % (value,))
        return [option + value]
    if kind == "tf":
        return ["%s=%s" % (option, "true" if _flag(value, name) else "false")]
    if kind == "onoff":
        return [option[0] if _flag(value, name) else option[1]]
    if kind == "int":
        return ["%s=%d" % (option, _int(value, name, spec[0], spec[1]))]
    if kind == "choice":
        return ["%s=%s" % (option, _choice(value, name, spec))]
    return ["%s=%s" % (option, _text(value, name))]  # text


@dataclass
class ProgramOptions:
    """Typed NVRTC options; each field is one option of nvrtc.h (CUDA 13.0).

    ``None`` (or ``False``, or an empty list) leaves an option out, so
    NVRTC's default holds.  Fields, with the option each becomes:

    Target and linking: ``arch`` (``"sm_90"``, ``"sm_90a"``, ``"compute_90"``;
    otherwise ``compile`` picks, ``-arch``), ``relocatable_device_code``
    (``-rdc=true|false``), ``extensible_whole_program`` (``-ewp``),
    ``link_time_optimization`` (``-dlto``; ``compile(target="ltoir")`` adds it
    anyway), ``gen_opt_lto`` (``--gen-opt-lto``).

    Debugging: ``device_debug`` (``-G``), ``lineinfo`` (``-lineinfo``),
    ``device_optimize`` (``--dopt=on``).

    Code generation: ``fast_compile`` (``"0"``, ``"min"``, ``"mid"``,
    ``"max"``: ``--Ofast-compile``), ``ptxas_options`` (list, each
    ``--ptxas-options=``), ``max_register_count`` (``--maxrregcount``, >= 1),
    ``ftz``, ``prec_sqrt``, ``prec_div``, ``fmad`` (bool or None),
    ``use_fast_math``, ``extra_device_vectorization``,
    ``modify_stack_limit`` (bool or None), ``jump_table_density`` (0-101),
    ``device_stack_protector`` (bool or None), ``no_cache`` (NVRTC's own
    cache, not cuabi's), ``random_seed`` (str, ``--frandom-seed``).

    Preprocessing: ``define_macro`` (a list of ``"NAME"``/``"NAME=VALUE"``
    or a dict whose None values mean no value), ``undefine_macro``,
    ``include_path``, ``pre_include`` (lists), ``no_source_include``.

    Language: ``std`` (``"c++03"`` ... ``"c++20"``),
    ``builtin_move_forward``, ``builtin_initializer_list`` (bool or None).

    Precompiled headers: ``pch`` (automatic), ``create_pch``, ``use_pch``,
    ``pch_dir`` (str), ``pch_verbose``, ``pch_messages``,
    ``instantiate_templates_in_pch`` (bool or None).

    Diagnostics and the rest: ``disable_warnings`` (``-w``), ``restrict``,
    ``device_as_default_execution_space`` (``-default-device``),
    ``device_int128``, ``device_float128``, ``optimization_info``
    (``"inline"``), ``display_error_number`` (True ``-err-no``, False
    ``-no-err-no``), ``diag_error``, ``diag_suppress``, ``diag_warn`` (lists
    of diagnostic numbers), ``brief_diagnostics`` (bool or None), ``time``
    (a file, ``"-"`` for the log), ``split_compile`` (threads, 0 = all),
    ``device_syntax_only``, ``minimal``, ``device_time_trace`` (a file), and
    ``extra`` (option strings appended as they are).
    """

    arch: Optional[str] = None
    relocatable_device_code: Optional[bool] = None
    extensible_whole_program: bool = False
    device_debug: bool = False
    lineinfo: bool = False
    device_optimize: bool = False
    fast_compile: Optional[str] = None
    ptxas_options: Sequence[str] = field(default_factory=list)
    max_register_count: Optional[int] = None
    ftz: Optional[bool] = None
    prec_sqrt: Optional[bool] = None
    prec_div: Optional[bool] = None
    fmad: Optional[bool] = None
    use_fast_math: bool = False
    extra_device_vectorization: bool = False
    modify_stack_limit: Optional[bool] = None
    link_time_optimization: bool = False
    gen_opt_lto: bool = False
    jump_table_density: Optional[int] = None
    device_stack_protector: Optional[bool] = None
    no_cache: bool = False
    random_seed: Optional[str] = None
    define_macro: Macros = field(default_factory=list)
    undefine_macro: Sequence[str] = field(default_factory=list)
    include_path: Sequence[str] = field(default_factory=list)
    pre_include: Sequence[str] = field(default_factory=list)
    no_source_include: bool = False
    std: Optional[str] = None
    builtin_move_forward: Optional[bool] = None
    builtin_initializer_list: Optional[bool] = None
    pch: bool = False
    create_pch: Optional[str] = None
    use_pch: Optional[str] = None
    pch_dir: Optional[str] = None
    pch_verbose: Optional[bool] = None
    pch_messages: Optional[bool] = None
    instantiate_templates_in_pch: Optional[bool] = None
    disable_warnings: bool = False
    restrict: bool = False
    device_as_default_execution_space: bool = False
    device_int128: bool = False
    device_float128: bool = False
    optimization_info: Optional[str] = None
    display_error_number: Optional[bool] = None
    diag_error: Sequence[int] = field(default_factory=list)
    diag_suppress: Sequence[int] = field(default_factory=list)
    diag_warn: Sequence[int] = field(default_factory=list)
    brief_diagnostics: Optional[bool] = None
    time: Optional[str] = None
    split_compile: Optional[int] = None
    device_syntax_only: bool = False
    minimal: bool = False
    device_time_trace: Optional[str] = None
    extra: Sequence[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.as_list()  # a bad field is reported where the options are made

    def as_list(self) -> List[str]:
        """The NVRTC option strings these fields stand for, checked, in nvrtc.h's order."""
        out: List[str] = []
        for name, kind, option, spec in _FIELDS:
            out.extend(_render(name, kind, option, spec, getattr(self, name)))
        return out


def _check_table() -> None:
    """Every dataclass field has a row in _FIELDS and the other way round (a test calls this)."""
    declared = [f.name for f in fields(ProgramOptions)]
    listed = [row[0] for row in _FIELDS]
    if declared != listed:
        raise AssertionError("ProgramOptions fields and _FIELDS differ: %r" % (set(declared) ^ set(listed),))
