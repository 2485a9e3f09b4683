#!/usr/bin/env python3
"""Damages a kiln artifact for the runtime's error tests:
patch_artifact.py IN OUT truncate N      keep the first N bytes
patch_artifact.py IN OUT version V       set Model.format_version to V
patch_artifact.py IN OUT identifier XXXX replace the file identifier
patch_artifact.py IN OUT flip N          flip the low bit of the byte at N% of the file
patch_artifact.py IN OUT flip-text WORD  flip the low bit of WORD's first byte where it
                                         first stands: inside a string's characters,
                                         which only the checksum can tell from intact

Reads just enough FlatBuffers layout (root offset, vtable) to find the version,
the first field of the Model table (runtime/schema/kiln_artifact.fbs)."""
import struct
import sys


def main():
    src, dst, what, arg = sys.argv[1:5]
    data = bytearray(open(src, "rb").read())
    if what == "truncate":
        data = data[: int(arg)]
    elif what == "version":
        root = struct.unpack_from("<I", data, 0)[0]
        vtable = root - struct.unpack_from("<i", data, root)[0]
        field = struct.unpack_from("<H", data, vtable + 4)[0]  # field 0: format_version
        struct.pack_into("<I", data, root + field, int(arg))
    elif what == "flip":
        data[len(data) * int(arg) // 100] ^= 1
    elif what == "flip-text":
        at = data.find(arg.encode())
        if at < 0:
            sys.exit(f"'{arg}' is not in {src}")
        data[at] ^= 1
    elif what == "identifier":
        data[4:8] = arg.encode()[:4].ljust(4, b"_")
    else:
        sys.exit(f"unknown damage '{what}'")
    open(dst, "wb").write(data)


if __name__ == "__main__":
    main()
