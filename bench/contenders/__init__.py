# SPDX-License-Identifier: Apache-2.0
"""The Python contenders of bench/run, one module each (see bench/ops.py for
the list).  A module imports its library only inside load(), so that
bench/startup.py can time that import in a fresh process.  Its interface:

    load() -> handle            import the library (timed as "import")
    version(handle) -> str
    ready(handle)               optional: finish loading a lazily imported
                                library without calling the driver
    first_call(handle)          initialise the driver and find device 0
    first_use(handle) -> obj    a current context and a 1 MiB device allocation
    class Bench(handle, ptx)    set up for the steady-state operations:
        sync()                  wait for all GPU work of the process
        check(result)           raise if an op's return value says it failed
        op_<name>() -> Op       one method per operation of bench/ops.py it
                                offers; NO_EQUIVALENT maps the others to why
"""
