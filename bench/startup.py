# SPDX-License-Identifier: Apache-2.0
"""One fresh-process start-up measurement of a Python contender.

    python3 bench/startup.py MODULE

Prints one JSON line:
    import_ns       the contender's import (module.load()), in a process that
                    has imported nothing of it before
    ready_ns        from before the import until the library is loaded and
                    ready to call, without touching the driver (differs from
                    import_ns only for a library that loads lazily: module.ready())
    first_call_ns   from before the import to the first successful driver call
                    (module.first_call(): initialise the driver, find device 0)
    use_ns          from before the import to first use (module.first_use():
                    a context current and a 1 MiB device allocation)
    rss_*_kb        resident memory before the import, after it, after first use
    version         the library's version
    error           what failed, when something did (the steps before it count)
"""

import json
import sys
from time import perf_counter_ns

from common import contender_module, one_line, rss_kb


def main():
    module = contender_module(sys.argv[1])
    result = {"rss_start_kb": rss_kb()}
    t0 = perf_counter_ns()
    try:
        handle = module.load()
    except Exception as exc:
        result["error"] = "import failed: " + one_line(exc)
        print(json.dumps(result))
        return 0
    result["import_ns"] = perf_counter_ns() - t0
    try:
        if hasattr(module, "ready"):
            module.ready(handle)
        result["ready_ns"] = perf_counter_ns() - t0
        result["rss_import_kb"] = rss_kb()
        module.first_call(handle)
        result["first_call_ns"] = perf_counter_ns() - t0
        kept = module.first_use(handle)
        result["use_ns"] = perf_counter_ns() - t0
        result["rss_use_kb"] = rss_kb()
        del kept
    except Exception as exc:
        result["error"] = one_line(exc)
    try:
        result["version"] = module.version(handle)
    except Exception as exc:
        result["version"] = "? (" + one_line(exc) + ")"
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
