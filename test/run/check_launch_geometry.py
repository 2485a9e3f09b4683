#!/usr/bin/env python3
"""Checks a fake-driver launch log against a compile report made with the same
symbol values (--bind): no launch's grid exceeds what its kernel's work needs
(the report's launch_work: the work items its schedule states, else its
result's elements; a block per item for block-per-item schedules, else items
over the block's threads; at most 65535 blocks). Every launch is checked.

    check_launch_geometry.py REPORT.json LAUNCHES.log
"""
import json
import sys

work = json.load(open(sys.argv[1]))["launch_work"]
failures, checked = [], 0
for line in open(sys.argv[2]):
    name, grid, block = line.split()
    grid, block = int(grid), int(block)
    if name not in work:
        failures.append(f"{name}: launched but not in the report")
        continue
    items = work[name]["work_items"]
    if items is None:
        failures.append(f"{name}: the report has no work items at the bound symbols")
        continue
    per_block = 1 if work[name]["block_per_item"] else block
    need = min(max(1, -(-items // per_block)), 65535)
    checked += 1
    if grid > need:
        failures.append(f"{name}: grid {grid} for {items} work items, {per_block} per block: needs {need}")
for f in failures:
    print("FAIL", f)
print(f"{checked} launches checked, {len(failures)} over their work")
sys.exit(1 if failures else 0)
