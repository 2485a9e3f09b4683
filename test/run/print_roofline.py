#!/usr/bin/env python3
"""Prints a kiln-compile --report's roofline steps that run on the device, a
line each: kind, schedule, bytes, l2 bytes ("-" when none), bound and
elements (what a per-element instruction count scales by).

    print_roofline.py REPORT.json
"""
import json
import sys

for step in json.load(open(sys.argv[1]))["roofline"]["steps"]:
    if step["kind"] in ("shape", "view"):
        continue
    print(step["kind"], step.get("schedule", ""), "bytes", step["bytes"], "l2", step.get("l2_bytes", "-"),
          "bound", step.get("bound", "-"), "elements", step.get("elements"))
