# SPDX-License-Identifier: Apache-2.0
"""The Python tables generated from include/cuabi/driver_api.json say what the JSON says:
struct formats match its record layouts, own codes and own functions match its lists."""

import json
import os
import re
import struct
import sys

import pytest

from conftest import ROOT

import cuabi
from cuabi import _own_table, _structs, errors

TABLE = os.path.join(ROOT, "include", "cuabi", "driver_api.json")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import gen_python  # noqa: E402


@pytest.fixture(scope="module")
def table():
    with open(TABLE) as f:
        return json.load(f)


def _format_offsets(fmt):
    """Offset of each field of a struct format, padding ("x") skipped."""
    offsets, done = [], fmt[0]
    for count, code in re.findall(r"(\d*)([a-zA-Z?])", fmt[1:]):
        if code != "x":
            offsets.append(struct.calcsize(done))
        done += count + code
    return offsets


def _json_offsets(records, name, base=0):
    """Offsets of a record's fields from the JSON, nested structs expanded."""
    out, end = [], 0
    for f in records[name]["fields"]:
        if base + f["offset"] < end and base + f["offset"] + f["size"] <= end:
            continue  # another member of an anonymous union: packed as the first one
        end = max(end, base + f["offset"] + f["size"])
        nested = f.get("record")
        if nested and f.get("count", 1) == 1 and records[nested]["kind"] == "struct":
            out += _json_offsets(records, nested, base + f["offset"])
        else:
            out.append(base + f["offset"])
    return out


@pytest.mark.parametrize("name", sorted(_structs.FORMATS))
def test_struct_format_has_the_records_size(table, name):
    """Each generated struct format packs exactly as many bytes as the C struct has."""
    assert struct.calcsize(_structs.FORMATS[name]) == table["records"][name]["size"] == _structs.SIZES[name]


@pytest.mark.parametrize("name", sorted(_structs.FORMATS))
def test_struct_format_puts_each_field_at_its_offset(table, name):
    """Each field of a generated format starts at the offset the JSON record gives it."""
    assert _format_offsets(_structs.FORMATS[name]) == _json_offsets(table["records"], name)
    assert len(_structs.FIELDS[name]) == len(_format_offsets(_structs.FORMATS[name]))


def test_record_format_pads_flattens_and_keeps_unions_as_bytes():
    """A fixture record's format has its padding, nested struct, union and arrays at their offsets."""
    records = {
        "outer": {"kind": "struct", "size": 48, "align": 8, "fields": [
            {"name": "a", "offset": 0, "size": 1, "code": "B", "count": 1},
            {"name": "inner", "offset": 4, "size": 8, "code": None, "count": 1, "record": "inner"},
            {"name": "p", "offset": 16, "size": 8, "code": "p", "count": 1},
            {"name": "u", "offset": 24, "size": 8, "code": None, "count": 1, "record": "u"},
            {"name": "dims", "offset": 32, "size": 12, "code": "I", "count": 3}]},
        "inner": {"kind": "struct", "size": 8, "align": 4, "fields": [
            {"name": "x", "offset": 0, "size": 4, "code": "i", "count": 1},
            {"name": "y", "offset": 4, "size": 4, "code": "f", "count": 1}]},
        "u": {"kind": "union", "size": 8, "align": 8, "fields": [
            {"name": "q", "offset": 0, "size": 8, "code": "Q", "count": 1}]},
    }
    fmt, names = gen_python.record_format(records, "outer")
    assert fmt == "=1s3xif4xQ8s3I4x"
    assert names == ["a", "inner.x", "inner.y", "p", "u", "dims"]
    assert struct.calcsize(fmt) == 48


def test_own_codes_are_the_jsons(table):
    """The generated own-code table lists the JSON's own codes: names, values, kinds."""
    expected = sorted((c["name"], c["value"], c["kind"]) for c in table["own_codes"])
    assert sorted(_own_table.OWN_CODES) == expected


@pytest.mark.parametrize("name, code, kind", _own_table.OWN_CODES)
def test_each_own_code_has_its_class_on_its_kinds_base(name, code, kind):
    """An own code raises the class named for it, derived from its kind's base class."""
    cls = errors.by_code(code)
    assert cls.__name__ == errors.class_name_for(name) and cls.code == code
    kinds = [k for k, base in errors.KIND_BASES.items() if base is not errors.CUDAError and issubclass(cls, base)]
    assert kinds == ([] if errors.KIND_BASES[kind] is errors.CUDAError else [kind])


def test_own_codes_are_curesult_enumerators(table):
    """cuabi.driver.CUresult names libcuabi's own codes too."""
    for name, code, _kind in _own_table.OWN_CODES:
        assert cuabi.driver.CUresult[name] == code


def test_own_functions_are_the_jsons(table):
    """The generated own-function table has every own function, one kind per parameter."""
    assert {f["name"]: len(f["params"]) for f in table["own_api"]} == \
        {name: len(params) for name, (_result, params) in _own_table.OWN_FUNCTIONS.items()}


def test_own_cdef_declares_every_own_function(table):
    """python/cdef/own.h (what cffi is built from) declares each own function once."""
    with open(gen_python.OUT_OWN_CDEF) as f:
        text = f.read()
    for fn in table["own_api"]:
        assert len(re.findall(r"\b%s\(" % fn["name"], text)) == 1, fn["name"]
