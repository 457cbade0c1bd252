"""segment.run in a fresh process, as the benchmarks time it: wall and CPU seconds (its
getrusage), peak RSS (VmHWM) and the documents in, out and removed as near-duplicates."""

from __future__ import annotations

import json
import os
import subprocess
import sys

_SCRIPT = (
    "import json,resource,sys,time;from pipelines.segment import stage as segment;"
    "t=time.time();c=segment.SegmentConfig.model_validate(json.loads(sys.argv[1]));"
    "s=segment.run(c);u=resource.getrusage(resource.RUSAGE_SELF);"
    "print(json.dumps({'wall_s':round(time.time()-t,2),'cpu_s':round(u.ru_utime+u.ru_stime,2),"
    "'peak_rss_mb':round(int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0])/1024),"
    "'documents_in':s['documents_in'],'documents_out':s['documents_out'],"
    "'near_duplicates':s['near_duplicates']['documents']}))"
)


def segment_process(config: dict) -> dict:
    """The figures of segment.run of `config` (SegmentConfig fields) in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, json.dumps(config)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    return json.loads(done.stdout.strip().splitlines()[-1])
