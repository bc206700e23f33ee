"""The GPU path (issue #12): train the largest packageable model in minutes from token arrays.

    python -m karukan_engine.training.gpu_train --arrays DIR --out DIR --minutes 8

Reads the arrays of token_arrays.py (no text, no tokenizer work on the GPU machine), trains
model.CharGPT with train.py's schedule (learning_rate, on this run's wall clock) and loss
(weighted_loss: surface + EOS, left context at --context-weight), batches built by data.batches /
data.collate in loader processes, bf16 autocast and fused AdamW on CUDA, a few micro-batches
accumulated per step (large token batches with little padding). The loop stops after --minutes
of wall clock (the schedule then ends decayed); the dev loss is measured every
--dev-every-minutes and at the end, and the weights with the lowest dev loss are kept (the final
ones unless the run overfits).

Output (all in --out, at most 8 files of at most 16 MiB, what a GPU machine gives back):
model.pt.part0..N + model.pt.index.json (weight_parts.py; joined they are a model.pt with the
keys of train.py's: model, config, tokens, progress, dev_loss; matrices stored as float16 by
default) and log.jsonl. The parts are also written every --save-every-minutes, so a run cut
short still leaves weights. Join with `python -m karukan_engine.training.weight_parts join`.
The same command runs on CPU with --device cpu and a tiny config (the rehearsal).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import queue as queue_module
import random
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

import torch
import torch.nn.functional as F

from karukan_engine.training.data import IGNORE, batches
from karukan_engine.training.model import CharGPT, ModelConfig
from karukan_engine.training.token_arrays import load_token_arrays
from karukan_engine.training.train import TrainOptions, learning_rate, mean_loss, weighted_loss
from karukan_engine.training.vocab import PAD_ID
from karukan_engine.training.weight_parts import PART_BYTES, save_payload_parts

Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor]
MIB = 1024 * 1024


@dataclass
class GpuOptions:
    arrays: Path
    out: Path
    minutes: float = 8.0
    n_embd: int = 512
    n_layer: int = 8
    n_head: int = 8
    lr: float = 1e-3
    warmup_minutes: float = 0.5
    weight_decay: float = 0.05
    context_weight: float = 0.5
    micro_tokens: int = 16384      # tokens per micro-batch (rows x padded length), data.batches' budget
    accum: int = 4                 # micro-batches per optimiser step
    device: str = "cuda"
    amp: str = "auto"              # bf16 | off | auto (bf16 on CUDA)
    compile: bool = False
    loader_workers: int = 6        # 0: build batches in this process
    dev_every_minutes: float = 1.0
    save_every_minutes: float = 2.0
    keep_best: bool = True
    save_dtype: str = "float16"    # matrices and embeddings; vectors stay float32
    pad_multiple: int = 8
    part_bytes: int = PART_BYTES
    max_out_files: int = 8         # parts + index + log.jsonl
    max_out_bytes: int = 60 * MIB
    max_steps: int | None = None
    dev_limit: int | None = None   # score only the first N dev examples (rehearsals)
    threads: int | None = None
    seed: int = 0
    log_every: int = 50


def parameter_count(config: ModelConfig) -> int:
    """CharGPT's parameters (LM head tied): V*d + n_ctx*d + n_layer*(12 d^2 + 13 d) + 2 d."""
    d = config.n_embd
    return config.vocab_size * d + config.n_ctx * d + config.n_layer * (12 * d * d + 13 * d) + 2 * d


def vector_count(config: ModelConfig) -> int:
    """Parameters in 1-D tensors (LayerNorms and biases), kept in float32 when saved."""
    d = config.n_embd
    return config.n_layer * 13 * d + 2 * d


def payload_bytes(config: ModelConfig, save_dtype: str, n_tokens: int) -> int:
    """An upper estimate of the saved payload: tensors, the token list and pickle overhead."""
    itemsize = torch.empty(0, dtype=getattr(torch, save_dtype)).element_size()
    vectors = vector_count(config)
    tensors = 4 + config.n_layer * 12
    return (parameter_count(config) - vectors) * itemsize + vectors * 4 + 16 * n_tokens + 2048 * tensors + 65536


def check_output_fits(config: ModelConfig, options: GpuOptions, n_tokens: int) -> int:
    """Raise before any training when the weights would not come back; returns the part count."""
    size = payload_bytes(config, options.save_dtype, n_tokens)
    parts = math.ceil(size / options.part_bytes)
    if parts + 2 > options.max_out_files or size > options.max_out_bytes:
        raise ValueError(f"{parameter_count(config) / 1e6:.1f} M parameters in {options.save_dtype} are about "
                         f"{size / MIB:.1f} MiB in {parts} parts: over the {options.max_out_files} files / "
                         f"{options.max_out_bytes / MIB:.0f} MiB that come back")
    return parts


def pad_to_multiple(batch: Batch, multiple: int, n_ctx: int) -> Batch:
    """Right-pad a collated batch to a length multiple (no loss, no effect on earlier positions)."""
    inputs, targets, weights = batch
    length = inputs.shape[1]
    extra = min((-length) % max(multiple, 1), n_ctx - length)
    if extra <= 0:
        return batch
    return (F.pad(inputs, (0, extra), value=PAD_ID), F.pad(targets, (0, extra), value=IGNORE),
            F.pad(weights, (0, extra), value=0.0))


def micro_scales(micro: list[Batch]) -> list[float]:
    """Per-micro-batch factors making the sum of weighted_loss terms the step's weighted mean."""
    sums = [float(weights.sum()) for _, _, weights in micro]
    total = sum(sums)
    return [s / total if total > 0 else 0.0 for s in sums]


def state_for_save(state: dict[str, torch.Tensor], save_dtype: str) -> dict[str, torch.Tensor]:
    """CPU copies: tensors of 2+ dims in save_dtype, vectors in float32."""
    dtype = getattr(torch, save_dtype)
    return {name: tensor.detach().to("cpu", dtype=dtype if tensor.dim() >= 2 else torch.float32, copy=True)
            for name, tensor in state.items()}


def _in_process_batches(train, options: GpuOptions) -> Iterator[Batch]:
    epoch = 0
    while True:
        yield from batches(train, options.micro_tokens, random.Random(options.seed * 1000 + epoch),
                           options.context_weight)
        epoch += 1


def _loader_worker(arrays: str, worker: int, workers: int, micro_tokens: int, context_weight: float,
                   seed: int, out_queue, stop) -> None:
    """A loader process: endless epochs of data.batches over its shard, as numpy (plain pickles)."""
    try:
        torch.set_num_threads(1)
        shard = load_token_arrays(Path(arrays), ("train",)).train[worker::workers]
        epoch = 0
        while not stop.is_set():
            rng = random.Random((seed * 1000 + epoch) * 1000 + worker)
            for batch in batches(shard, micro_tokens, rng, context_weight):
                item = tuple(t.numpy() for t in batch)
                while not stop.is_set():
                    try:
                        out_queue.put(item, timeout=0.5)
                        break
                    except queue_module.Full:
                        continue
                if stop.is_set():
                    break
            epoch += 1
    except BaseException:  # reported to the trainer, which stops with it
        try:
            out_queue.put(("error", traceback.format_exc()), timeout=5)
        except queue_module.Full:
            pass
        return  # the queue's feeder delivers the report before this process exits
    # Stopped: batches still buffered are not needed, and exiting must not wait on a full pipe.
    out_queue.cancel_join_thread()


class WorkerBatches:
    """Batches from loader processes (spawned: no fork after torch or CUDA started)."""

    def __init__(self, options: GpuOptions) -> None:
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        workers = options.loader_workers
        self.queue = context.Queue(maxsize=4 * workers)
        self.stop = context.Event()
        self.processes = [context.Process(target=_loader_worker, daemon=True,
                                          args=(str(options.arrays), w, workers, options.micro_tokens,
                                                options.context_weight, options.seed, self.queue, self.stop))
                          for w in range(workers)]
        for process in self.processes:
            process.start()

    def __iter__(self) -> "WorkerBatches":
        return self

    def __next__(self) -> Batch:
        while True:
            try:
                item = self.queue.get(timeout=10)
            except queue_module.Empty:
                if any(p.is_alive() for p in self.processes):
                    continue
                try:  # a report sent just before the last process ended
                    item = self.queue.get(timeout=1)
                except queue_module.Empty:
                    raise RuntimeError("every loader process has stopped") from None
            if isinstance(item[0], str):
                raise RuntimeError(f"a loader process failed:\n{item[1]}")
            return tuple(torch.from_numpy(a) for a in item)

    def close(self) -> None:
        self.stop.set()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(p.is_alive() for p in self.processes):
            try:
                self.queue.get(timeout=0.2)
            except queue_module.Empty:
                pass
        for process in self.processes:
            process.join(timeout=1)
            if process.is_alive():
                process.terminate()
                # Reap it: a loader still importing torch on a busy machine outlives the wait above.
                process.join(timeout=5)


def open_batches(options: GpuOptions, data, log) -> tuple[Iterator[Batch], WorkerBatches | None]:
    """Loader processes when asked for and they work (a first batch arrives), else this process."""
    if options.loader_workers:
        source = None
        try:
            source = WorkerBatches(options)
            first = next(source)
            return itertools.chain([first], source), source
        except Exception as error:  # e.g. a sandbox without the semaphores multiprocessing needs
            log(f"loader processes unavailable ({error!r}); building batches in this process")
            if source is not None:
                source.close()
    if not data.train:
        data.train = load_token_arrays(options.arrays, ("train",)).train
    return _in_process_batches(data.train, options), None


def _print(message: str) -> None:
    print(message, flush=True)


@dataclass
class GpuRun:
    summary: dict                       # the last log.jsonl record
    model: CharGPT                      # as trained (its final weights)
    saved: dict[str, torch.Tensor]      # the weights written to the parts (final or lowest dev loss)


def train_gpu(options: GpuOptions, log=_print) -> GpuRun:
    """Train, write the parts and log.jsonl to options.out."""
    run_started = time.monotonic()
    options.out.mkdir(parents=True, exist_ok=True)
    if options.threads:
        torch.set_num_threads(options.threads)
    torch.manual_seed(options.seed)
    on_cuda = options.device.startswith("cuda")
    amp = options.amp if options.amp != "auto" else ("bf16" if on_cuda else "off")
    data = load_token_arrays(options.arrays, ("dev",) if options.loader_workers else ("train", "dev"))
    config = ModelConfig(vocab_size=len(data.tokens), n_ctx=data.meta["n_ctx"], n_embd=options.n_embd,
                         n_layer=options.n_layer, n_head=options.n_head)
    parts = check_output_fits(config, options, len(data.tokens))
    dev = data.dev[: options.dev_limit] if options.dev_limit is not None else data.dev
    # Loader processes start before CUDA and before any large torch work in this process.
    stream, source = open_batches(options, data, log)
    log_file = (options.out / "log.jsonl").open("a", encoding="utf-8")

    def record(entry: dict) -> None:
        log_file.write(json.dumps(entry) + "\n")
        log_file.flush()

    try:
        if on_cuda:
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
        model = CharGPT(config).to(options.device)
        forward = torch.compile(model) if options.compile else model
        decay = [p for p in model.parameters() if p.dim() >= 2]
        no_decay = [p for p in model.parameters() if p.dim() < 2]
        optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": options.weight_decay},
                                       {"params": no_decay, "weight_decay": 0.0}],
                                      lr=options.lr, betas=(0.9, 0.98), **({"fused": True} if on_cuda else {}))
        schedule = TrainOptions(minutes=options.minutes, lr=options.lr, warmup_minutes=options.warmup_minutes)
        train_tokens = data.meta["train"]["tokens"]
        log(f"model: {model.n_params() / 1e6:.2f} M parameters (d {config.n_embd}, {config.n_layer} layers, "
            f"vocab {config.vocab_size}), {data.meta['train']['kept']} training examples, {len(dev)} dev, "
            f"{options.device} amp={amp} compile={options.compile}, weights in {parts} parts")
        record({"event": "start", "options": {k: str(v) for k, v in asdict(options).items()},
                "config": config.to_dict(), "params": model.n_params(), "arrays": data.meta,
                "torch": torch.__version__, "loader_processes": len(source.processes) if source else 0,
                "device_name": torch.cuda.get_device_name(options.device) if on_cuda else "cpu"})
        progress = {"elapsed": 0.0, "epoch": 0.0, "batch_index": 0, "step": 0, "tokens_seen": 0,
                    "real_tokens_seen": 0}
        best: dict = {"dev_loss": math.inf, "state": None, "step": 0}

        def evaluate_dev() -> float:
            dev_loss = mean_loss(model, dev, options.micro_tokens, options.device)
            if options.keep_best and dev_loss < best["dev_loss"]:
                best.update(dev_loss=dev_loss, step=progress["step"],
                            state={k: v.detach().clone() for k, v in model.state_dict().items()})
            return dev_loss

        def save(state: dict, dev_loss: float | None, final: bool, chosen_step: int) -> None:
            payload = {"model": state_for_save(state, options.save_dtype), "config": config.to_dict(),
                       "tokens": data.tokens, "dev_loss": dev_loss,
                       "progress": {**progress, "final": final, "chosen_step": chosen_step, "device": options.device,
                                    "recipe": "gpu_train", "options": {k: str(v) for k, v in asdict(options).items()}}}
            save_payload_parts(payload, options.out, part_bytes=options.part_bytes)

        waited = {"s": 0.0}

        def take() -> Batch:
            begin = time.monotonic()
            batch = next(stream)
            waited["s"] += time.monotonic() - begin
            return batch

        first = next(stream)  # loaders are up: the clock starts here
        started = time.monotonic()
        pending: list[Batch] = [first]
        last_dev = last_save = 0.0
        window_tokens, window_real, window_start = 0, 0, time.monotonic()
        setup_s = started - run_started
        while True:
            elapsed = time.monotonic() - started
            if elapsed >= options.minutes * 60 or (options.max_steps is not None
                                                    and progress["step"] >= options.max_steps):
                break
            micro = pending + [take() for _ in range(options.accum - len(pending))]
            pending = []
            lr = learning_rate(schedule, elapsed)
            for group in optimizer.param_groups:
                group["lr"] = lr
            optimizer.zero_grad(set_to_none=True)
            step_loss = torch.zeros((), device=options.device)
            for scale, batch in zip(micro_scales(micro), micro):
                inputs, targets, weights = pad_to_multiple(batch, options.pad_multiple, config.n_ctx)
                real = int((inputs != PAD_ID).sum())
                inputs = inputs.to(options.device, non_blocking=True)
                targets = targets.to(options.device, non_blocking=True)
                weights = weights.to(options.device, non_blocking=True)
                with torch.autocast(device_type=torch.device(options.device).type, dtype=torch.bfloat16,
                                    enabled=amp == "bf16"):
                    logits = forward(inputs)
                loss = weighted_loss(logits.float(), targets, weights) * scale
                loss.backward()
                step_loss += loss.detach()
                progress["tokens_seen"] += inputs.numel()
                progress["real_tokens_seen"] += real
                window_tokens += inputs.numel()
                window_real += real
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            progress["step"] += 1
            progress["elapsed"] = time.monotonic() - started
            progress["epoch"] = progress["real_tokens_seen"] / max(train_tokens, 1)
            if progress["step"] % options.log_every == 0:
                span = time.monotonic() - window_start
                entry = {"step": progress["step"], "minutes": round(progress["elapsed"] / 60, 3),
                         "loss": round(step_loss.item(), 4), "lr": lr, "epoch": round(progress["epoch"], 3),
                         "tokens_per_s": round(window_tokens / span), "real_tokens_per_s": round(window_real / span),
                         "steps_per_s": round(options.log_every / span, 3),
                         "loader_wait_share": round(waited["s"] / span, 3)}
                waited["s"] = 0.0
                record(entry)
                log(json.dumps(entry))
                window_tokens, window_real, window_start = 0, 0, time.monotonic()
            if progress["elapsed"] - last_dev >= options.dev_every_minutes * 60:
                last_dev = progress["elapsed"]
                dev_loss = evaluate_dev()
                entry = {"step": progress["step"], "minutes": round(last_dev / 60, 3), "dev_loss": round(dev_loss, 4)}
                record(entry)
                log(json.dumps(entry))
                if progress["elapsed"] - last_save >= options.save_every_minutes * 60:
                    last_save = progress["elapsed"]
                    chosen = best if best["state"] is not None else {"state": model.state_dict(), "dev_loss": dev_loss,
                                                                     "step": progress["step"]}
                    save(chosen["state"], chosen["dev_loss"], False, chosen["step"])
        if on_cuda:
            torch.cuda.synchronize()
        final_dev = evaluate_dev()
        if options.keep_best and best["state"] is not None and best["dev_loss"] < final_dev:
            state, dev_loss, chosen_step = best["state"], best["dev_loss"], best["step"]
        else:
            state, dev_loss, chosen_step = model.state_dict(), final_dev, progress["step"]
        save(state, dev_loss, True, chosen_step)
        summary = {"event": "done", "steps": progress["step"], "train_minutes": round(progress["elapsed"] / 60, 3),
                   "setup_s": round(setup_s, 1), "wall_s": round(time.monotonic() - run_started, 1),
                   "tokens_seen": progress["tokens_seen"], "real_tokens_seen": progress["real_tokens_seen"],
                   "epochs": round(progress["epoch"], 3), "final_dev_loss": round(final_dev, 4),
                   "dev_loss": round(dev_loss, 4), "chosen_step": chosen_step,
                   "steps_per_s": round(progress["step"] / max(progress["elapsed"], 1e-9), 3),
                   "real_tokens_per_s": round(progress["real_tokens_seen"] / max(progress["elapsed"], 1e-9))}
        record(summary)
        log(json.dumps(summary))
        return GpuRun(summary, model, state_for_save(state, options.save_dtype))
    finally:
        log_file.close()
        if source is not None:
            source.close()


def options_from_args(argv: list[str] | None = None) -> GpuOptions:
    defaults = GpuOptions(arrays=Path("."), out=Path("."))
    parser = argparse.ArgumentParser(prog="python -m karukan_engine.training.gpu_train", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arrays", type=Path, required=True, help="token_arrays.py's output directory")
    parser.add_argument("--out", type=Path, required=True, help="where the parts and log.jsonl go")
    for name in ("minutes", "lr", "warmup_minutes", "weight_decay", "context_weight", "dev_every_minutes",
                 "save_every_minutes"):
        parser.add_argument("--" + name.replace("_", "-"), type=float, default=getattr(defaults, name))
    for name in ("n_embd", "n_layer", "n_head", "micro_tokens", "accum", "loader_workers", "pad_multiple",
                 "seed", "log_every"):
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=getattr(defaults, name))
    parser.add_argument("--max-steps", type=int, default=None, help="also stop after this many steps")
    parser.add_argument("--dev-limit", type=int, default=None, help="score only the first N dev examples")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument("--device", default=defaults.device)
    parser.add_argument("--amp", choices=("auto", "bf16", "off"), default=defaults.amp)
    parser.add_argument("--compile", action="store_true", help="torch.compile the model (off by default)")
    parser.add_argument("--no-keep-best", dest="keep_best", action="store_false",
                        help="save the final weights even when an earlier dev loss was lower")
    parser.add_argument("--save-dtype", choices=("float16", "bfloat16", "float32"), default=defaults.save_dtype)
    return GpuOptions(**vars(parser.parse_args(argv)))


def main(argv: list[str] | None = None) -> int:
    train_gpu(options_from_args(argv))
    return 0


if __name__ == "__main__":
    # Run the importable copy, so loader processes (spawned) find _loader_worker by its module name.
    from karukan_engine.training.gpu_train import main as _main

    sys.exit(_main())
