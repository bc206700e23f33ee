"""A torch payload written as files of at most 16 MiB, and joined back into one model.pt.

What comes back from a GPU machine is limited in file size, so gpu_train.py writes its weights as

    <dir>/model.pt.part0, model.pt.part1, ...   consecutive slices of torch.save(payload)
    <dir>/model.pt.index.json                   {"name", "bytes", "sha256", "parts": [{"file", "bytes", "sha256"}]}

The index is written last, so a directory whose index is present is complete; the joiner checks
every part's size and sha256 and the whole file's, and only then writes model.pt (atomically).

    python -m karukan_engine.training.weight_parts join PARTS_DIR TARGET/model.pt
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import sys
from pathlib import Path

PART_BYTES = 16 * 1024 * 1024


def index_path(directory: Path, name: str = "model.pt") -> Path:
    return directory / f"{name}.index.json"


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".partial")
    tmp.write_bytes(data)
    tmp.replace(path)


def write_parts(data: bytes, directory: Path, name: str = "model.pt", part_bytes: int = PART_BYTES,
                ) -> list[Path]:
    """Write data as <name>.partN files of at most part_bytes each, then the index; returns the files."""
    if part_bytes <= 0:
        raise ValueError("part_bytes must be positive")
    directory.mkdir(parents=True, exist_ok=True)
    index = index_path(directory, name)
    if index.exists():
        index.unlink()  # an index always describes the parts beside it
    chunks = [data[i : i + part_bytes] for i in range(0, len(data), part_bytes)] or [b""]
    parts = []
    for number, chunk in enumerate(chunks):
        path = directory / f"{name}.part{number}"
        _write_atomic(path, chunk)
        parts.append({"file": path.name, "bytes": len(chunk), "sha256": hashlib.sha256(chunk).hexdigest()})
    for stale in directory.glob(f"{name}.part*"):
        suffix = stale.name[len(name) + len(".part"):]
        if suffix.isdigit() and int(suffix) >= len(chunks):
            stale.unlink()
    _write_atomic(index, json.dumps({"name": name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                                     "parts": parts}, indent=1).encode("utf-8"))
    return [directory / p["file"] for p in parts] + [index]


def save_payload_parts(payload: dict, directory: Path, name: str = "model.pt",
                       part_bytes: int = PART_BYTES) -> list[Path]:
    import torch

    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return write_parts(buffer.getvalue(), directory, name, part_bytes)


def read_parts(directory: Path, name: str = "model.pt") -> bytes:
    """The joined bytes, after checking every part and the whole against the index."""
    index = json.loads(index_path(directory, name).read_text(encoding="utf-8"))
    chunks = []
    for part in index["parts"]:
        chunk = (directory / part["file"]).read_bytes()
        if len(chunk) != part["bytes"] or hashlib.sha256(chunk).hexdigest() != part["sha256"]:
            raise ValueError(f"{part['file']}: size or sha256 differs from the index (damaged or incomplete)")
        chunks.append(chunk)
    data = b"".join(chunks)
    if len(data) != index["bytes"] or hashlib.sha256(data).hexdigest() != index["sha256"]:
        raise ValueError(f"{directory}: the joined parts differ from the index")
    return data


def join_parts(directory: Path, target: Path, name: str = "model.pt") -> Path:
    data = read_parts(directory, name)
    target.parent.mkdir(parents=True, exist_ok=True)
    _write_atomic(target, data)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m karukan_engine.training.weight_parts",
                                     description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    join = sub.add_parser("join", help="check the parts and write the joined file")
    join.add_argument("parts_dir", type=Path)
    join.add_argument("target", type=Path)
    join.add_argument("--name", default="model.pt")
    args = parser.parse_args(argv)
    target = join_parts(args.parts_dir, args.target, args.name)
    print(f"{target}: {target.stat().st_size} bytes, sha256 checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
