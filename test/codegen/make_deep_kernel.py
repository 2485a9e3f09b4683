#!/usr/bin/env python3
"""Prints a kiln.kernel whose body is a chain of N negations (argv[1])."""
import sys

n = int(sys.argv[1])
print("func.func @deep(%x: tensor<8xf32>) -> tensor<8xf32> {")
print('  %k = kiln.kernel "pointwise"(%x) : (tensor<8xf32>) -> tensor<8xf32> {')
print("  ^bb0(%a: tensor<8xf32>):")
for i in range(n):
    source = "%a" if i == 0 else f"%v{i - 1}"
    print(f"    %v{i} = kiln.neg {source} : (tensor<8xf32>) -> tensor<8xf32>")
print(f"    kiln.yield %v{n - 1} : tensor<8xf32>")
print("  }")
print("  return %k : tensor<8xf32>")
print("}")
