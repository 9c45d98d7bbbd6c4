# SPDX-License-Identifier: Apache-2.0
"""NVRTC options as typed fields: :class:`ProgramOptions`.

``Program.compile`` takes one of these or the plain list of option strings
NVRTC reads; ``ProgramOptions(...).as_list()`` is that list.  Only the
fields that are set become options, so the defaults are NVRTC's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Union

Macros = Union[Sequence[str], Dict[str, Optional[str]]]


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


@dataclass
class ProgramOptions:
    """Typed NVRTC options (see NVRTC's documentation for what each does).

    ``arch`` (``"sm_90"``/``"compute_90"``; otherwise ``compile``'s own
    choice), ``std`` (``"c++17"``), ``device_debug`` (``-G``), ``lineinfo``,
    ``use_fast_math``, ``ftz``/``prec_div``/``prec_sqrt``/``fmad`` (None
    leaves NVRTC's default), ``max_register_count``,
    ``relocatable_device_code`` (``-rdc=true``), ``extensible_whole_program``,
    ``define_macro`` (a list of ``"NAME"``/``"NAME=VALUE"`` or a dict, None
    values meaning no value), ``undefine_macro``, ``include_path``,
    ``pre_include``, ``no_source_include``, ``disable_warnings`` (``-w``),
    ``restrict``, ``device_as_default_execution_space``, ``device_int128``,
    ``extra_device_vectorization``, ``optimization_info`` (``-opt-info``),
    ``split_compile`` (threads), ``ptxas_options`` (passed to ptxas),
    ``minimal``, and ``extra`` (option strings appended as they are).
    """

    arch: Optional[str] = None
    std: Optional[str] = None
    device_debug: bool = False
    lineinfo: bool = False
    use_fast_math: bool = False
    ftz: Optional[bool] = None
    prec_div: Optional[bool] = None
    prec_sqrt: Optional[bool] = None
    fmad: Optional[bool] = None
    max_register_count: Optional[int] = None
    relocatable_device_code: bool = False
    extensible_whole_program: bool = False
    define_macro: Macros = field(default_factory=list)
    undefine_macro: Sequence[str] = field(default_factory=list)
    include_path: Sequence[str] = field(default_factory=list)
    pre_include: Sequence[str] = field(default_factory=list)
    no_source_include: bool = False
    disable_warnings: bool = False
    restrict: bool = False
    device_as_default_execution_space: bool = False
    device_int128: bool = False
    extra_device_vectorization: bool = False
    optimization_info: Optional[str] = None
    split_compile: Optional[int] = None
    ptxas_options: Sequence[str] = field(default_factory=list)
    minimal: bool = False
    extra: Sequence[str] = field(default_factory=list)

    def as_list(self) -> List[str]:
        """The NVRTC option strings these fields stand for, checked."""
        out: List[str] = []
        if self.arch is not None:
            if not isinstance(self.arch, str) or not self.arch.startswith(("sm_", "compute_")):
                raise ValueError("ProgramOptions.arch must look like 'sm_90' or 'compute_90', got %r"
                                 % (self.arch,))
            out.append("-arch=" + self.arch)
        if self.std is not None:
            if not isinstance(self.std, str) or not self.std.startswith("c++"):
                raise ValueError("ProgramOptions.std must look like 'c++17', got %r" % (self.std,))
            out.append("-std=" + self.std)
        switches = (("device_debug", "-G"), ("lineinfo", "-lineinfo"), ("use_fast_math", "--use_fast_math"),
                    ("relocatable_device_code", "-rdc=true"), ("extensible_whole_program", "-ewp"),
                    ("no_source_include", "-no-source-include"), ("disable_warnings", "-w"),
                    ("restrict", "-restrict"), ("device_as_default_execution_space", "-default-device"),
                    ("device_int128", "-device-int128"),
                    ("extra_device_vectorization", "-extra-device-vectorization"), ("minimal", "-minimal"))
        for name, option in switches:
            if _flag(getattr(self, name), name):
                out.append(option)
        for name, option in (("ftz", "--ftz"), ("prec_div", "--prec-div"), ("prec_sqrt", "--prec-sqrt"),
                             ("fmad", "--fmad")):
            value = getattr(self, name)
            if value is not None:
                out.append("%s=%s" % (option, "true" if _flag(value, name) else "false"))
        for name, option in (("max_register_count", "--maxrregcount"), ("split_compile", "--split-compile")):
            value = getattr(self, name)
            if value is not None:
                if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                    raise ValueError("ProgramOptions.%s must be an int >= 0, got %r" % (name, value))
                out.append("%s=%d" % (option, value))
        if self.optimization_info is not None:
            out.append("-opt-info=" + self.optimization_info)
        macros = self.define_macro
        if isinstance(macros, dict):
            for k, v in macros.items():
                out.append("-D%s" % k if v is None else "-D%s=%s" % (k, v))
        else:
            out.extend("-D" + m for m in _strings(macros, "define_macro"))
        out.extend("-U" + m for m in _strings(self.undefine_macro, "undefine_macro"))
        out.extend("-I" + p for p in _strings(self.include_path, "include_path"))
        out.extend("--pre-include=" + p for p in _strings(self.pre_include, "pre_include"))
        out.extend("--ptxas-options=" + p for p in _strings(self.ptxas_options, "ptxas_options"))
        out.extend(_strings(self.extra, "extra"))
        return out
