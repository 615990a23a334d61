"""Whether anything the phase-unstated out-of-memory texts DO carry separates a load from a run (session 21,
diagnose21; the count behind issue #18's recurring miss, after diagnose20b's phase_unstated_count.py found no frame or
log line of a run in them).

Reads the tuning part only (never next/ nor held_out/): the tuning texts answered "out-of-memory, phase not stated"
(classify.PHASE_UNSTATED_ID, or FRAMEWORK_STEP_ID since the rule this count led to) and labelled the load (cuda_oom_load) or the run (cuda_oom_long_context). For each signal
the text carries — PyTorch's own figures (the size asked against the card, what PyTorch holds, the free memory, the
CUDA-graph pools), frames present or absent, the library or framework that printed the line, the allocator hint's
wording (which PyTorch release printed it), the user's own words about a batch — it counts the load and run texts
that carry it. A signal could move the answer without dropping a load text only where it is carried by run texts and
by no load text ("run only" below); a signal carried by both cannot decide, whatever its ratio. Session 21's diagnose21b
added the "run words" group (after rounds 68-69 joined tuning: their five misses were all training runs): the words a
user would read as training, fine-tuning or generation running — a script or config name, a progress bar, Epoch, step,
LoRA / PEFT / DreamBooth / GRPO / FSDP / DeepSpeed, loss, backward, an optimizer, a batch setting, generate( — and a
text that is the error line and nothing else. phase.RUN reads most of these words already, so a text carrying them is
answered the run before it can reach "phase not stated"; what is left here carries them 6 times at the load and once
at the run. Session 21's diagnose21c added the "load words" group (after round 70 joined tuning: five of its eight
phase-unstated misses were loads — a 65B GPTQ on one 24 GB card, a 33B in fp32 on one 80 GB GPU, a Mixtral deploy, an
fp32 load on an A10, an exl2 34B on a T4): the model's size against the card's (a parameter count, a weight dtype,
their product against the card's total, PyTorch's or named in prose), a need said in prose, the user's loading code
(from_pretrained, load_in_*, device_map, torch_dtype) and a refused block the size of one whole weight tensor.
Run from the worktree: PYTHONPATH=$PWD/src python3 measurements/public_errors/scoring/phase_unstated_signals.py
"""

from __future__ import annotations

import re
from collections.abc import Callable

from runlocal.diagnose import diagnose_text
from runlocal.diagnose.classify import FRAMEWORK_STEP_ID, PHASE_UNSTATED_ID
from runlocal.diagnose.cuda_oom import FRAMEWORK_OOM_LINE as FRAMEWORK_LINE
from runlocal.evidence import public_errors

MIB, GIB = 2**20, 2**30
LOAD, RUN = "cuda_oom_load", "cuda_oom_long_context"


def _words(pattern: str) -> Callable[[dict, dict], bool]:
    return lambda text_record, figures: re.search(pattern, text_record["text"], re.I | re.M) is not None


def _figure(test: Callable[[dict], bool]) -> Callable[[dict, dict], bool]:
    return lambda text_record, figures: test(figures)


def _ratio(figures: dict, top: str, bottom: str) -> float | None:
    a, b = figures.get(top), figures.get(bottom)
    return a / b if a is not None and b else None


def _between(value: float | None, low: float, high: float) -> bool:
    return value is not None and low <= value < high


# diagnose21c's load words: a parameter count ("65B", "8x7b", "70 billion"; not "24GB"), a weight dtype, bytes per
# parameter of that dtype (4-bit 0.5, 8-bit 1, 16-bit 2, fp32 4), a card's total named in prose or by a card whose
# size has one value, and a need said in prose
PARAMS = re.compile(r"(?<![\w.])(?:(\d+)x)?(\d{1,3}(?:\.\d)?)(?:b\b|\s*billion\b)", re.I)
DTYPE = re.compile(r"\b(?:fp32|float32|fp16|float16|bf16|bfloat16|int8|8-?bit|int4|4-?bit|gptq|awq|exl2|\d(?:\.\d+)?\s*bpw)\b",
                   re.I)
BYTES_PER_PARAM = ((r"fp32|float32", 4.0), (r"fp16|float16|bf16|bfloat16", 2.0), (r"int8|8-?bit", 1.0),
                   (r"int4|4-?bit|gptq|awq", 0.5))
NEEDS = re.compile(r"\b(?:needs?|requires?|required)\s+(?:about\s+|~\s*)?\d+(?:\.\d+)?\s*G(?:i)?B", re.I)
CARD_PROSE = re.compile(r"\b(\d+)\s*G(?:i)?B\s+(?:of\s+)?(?:v?ram|gpu|card|graphics)|(?:gpu|card|vram)\s+(?:has|with|of)\s+"
                        r"(?:only\s+)?(\d+)\s*G(?:i)?B", re.I)
CARDS_GIB = ((r"\bT4\b", 16), (r"\bA10G?\b", 24), (r"\b(?:RTX\s*)?(?:3090|4090)\b", 24), (r"\bV100\b", 16),
             (r"\b(?:RTX\s*)?3060\b", 12), (r"\b(?:RTX\s*)?4080\b", 16), (r"\bL4\b", 24))


def _card_named(text: str) -> float | None:
    m = CARD_PROSE.search(text)
    if m:
        return float(m.group(1) or m.group(2)) * GIB
    for pattern, gib in CARDS_GIB:
        if re.search(pattern, text):
            return float(gib * GIB)
    return None


def _weights_over_card(text: str, figures: dict, share: float) -> bool:
    count, dtype = PARAMS.search(text), DTYPE.search(text)
    card = figures.get("total_bytes") or _card_named(text)
    if not (count and dtype and card):
        return False
    per = next((b for pattern, b in BYTES_PER_PARAM if re.search(pattern, dtype.group(0), re.I)), None)
    if per is None:  # exl2's bits per weight: the figure itself
        bpw = re.search(r"(\d(?:\.\d+)?)\s*bpw", text, re.I)
        per = float(bpw.group(1)) / 8 if bpw else 0.5
    params = float(count.group(2)) * 1e9 * (int(count.group(1)) if count.group(1) else 1)
    return params * per >= share * card


# one whole weight tensor of a common decoder's shape, at 2 or 4 bytes: hidden x hidden, hidden x ffn, vocab x hidden
# (hidden / ffn / vocab sizes of Llama 1-3, Mistral / Mixtral, Qwen 1.5-2.5, GPT-2 / NeoX, Falcon as their config.json
# files give them); PyTorch prints the ask to 2 decimals of a MiB, so a match is within 0.01 MiB
HIDDEN = (2048, 2560, 3072, 3584, 4096, 5120, 6656, 7168, 8192)
FFN = (5632, 8192, 11008, 13824, 14336, 17920, 18944, 22016, 27648, 28672, 29568)
VOCAB = (32000, 32001, 32016, 32256, 32768, 50257, 50280, 65024, 128256, 151936, 152064)


def _whole_weight_tensor(asked: float | None) -> bool:
    if not asked:
        return False
    shapes = [h * h for h in HIDDEN] + [h * f for h in HIDDEN for f in FFN] + [v * h for v in VOCAB for h in HIDDEN]
    return any(abs(asked - n * b) < 0.011 * MIB for n in shapes for b in (2, 4))


# (group, signal, test over the record and diagnose's extracted figures)
SIGNALS: list[tuple[str, str, Callable[[dict, dict], bool]]] = [
    ("figures", "no size asked stated", _figure(lambda f: f.get("requested_bytes") is None)),
    ("figures", "asked < 64 MiB", _figure(lambda f: _between(f.get("requested_bytes"), 0, 64 * MIB))),
    ("figures", "asked 64 MiB - 1 GiB", _figure(lambda f: _between(f.get("requested_bytes"), 64 * MIB, GIB))),
    ("figures", "asked >= 1 GiB", _figure(lambda f: _between(f.get("requested_bytes"), GIB, float("inf")))),
    ("figures", "asked < 1 % of the card", _figure(lambda f: _between(_ratio(f, "requested_bytes", "total_bytes"),
                                                                       0, 0.01))),
    ("figures", "asked 1-5 % of the card", _figure(lambda f: _between(_ratio(f, "requested_bytes", "total_bytes"),
                                                                       0.01, 0.05))),
    ("figures", "asked 5-25 % of the card", _figure(lambda f: _between(_ratio(f, "requested_bytes", "total_bytes"),
                                                                        0.05, 0.25))),
    ("figures", "PyTorch holds < 50 % of the card", _figure(
        lambda f: _between(_ratio(f, "allocated_bytes", "total_bytes"), 0, 0.5))),
    ("figures", "PyTorch holds 50-90 % of the card", _figure(
        lambda f: _between(_ratio(f, "allocated_bytes", "total_bytes"), 0.5, 0.9))),
    ("figures", "PyTorch holds >= 90 % of the card", _figure(
        lambda f: _between(_ratio(f, "allocated_bytes", "total_bytes"), 0.9, 2))),
    ("figures", "free ~ 0 (< 1 % of the card), ask < 1 %", _figure(
        lambda f: _between(_ratio(f, "free_bytes", "total_bytes"), 0, 0.01)
        and _between(_ratio(f, "requested_bytes", "total_bytes"), 0, 0.01))),
    ("figures", "free ~ 0, ask >= 1 %", _figure(
        lambda f: _between(_ratio(f, "free_bytes", "total_bytes"), 0, 0.01)
        and _between(_ratio(f, "requested_bytes", "total_bytes"), 0.01, 2))),
    ("figures", "free >= ask (another cap refused it)", _figure(
        lambda f: f.get("free_bytes") is not None and f.get("requested_bytes") is not None
        and f["free_bytes"] >= f["requested_bytes"])),
    ("figures", "unused cache > 10 % of what PyTorch holds", _figure(
        lambda f: _between(_ratio(f, "reserved_unallocated_bytes", "allocated_bytes"), 0.1, float("inf")))),
    ("figures", "CUDA-graph private pools stated", _words(r"private pools")),
    ("figures", "other processes on the card named", _words(r"\bProcess \d+ has\b")),
    ("frames", "a traceback or frame", _words(r'Traceback \(most recent|File "')),
    ("frames", "the error line alone (one line)", lambda r, f: len([x for x in r["text"].splitlines() if x.strip()])
     == 1),
    ("printer", "torch.OutOfMemoryError / torch.cuda.OutOfMemoryError", _words(r"torch\.(?:cuda\.)?OutOfMemoryError")),
    ("printer", "RuntimeError: CUDA out of memory (PyTorch < 1.13)", _words(r"RuntimeError: CUDA out of memory")),
    ("printer", "CUDA error: out of memory (a CUDA status)", _words(r"CUDA error: out of memory")),
    ("printer", "NPU (torch_npu)", _words(r"\bNPU out of memory")),
    ("printer", "a non-PyTorch framework (FRAMEWORK_LINE)", _words(FRAMEWORK_LINE.pattern)),
    ("printer", "accelerate", _words(r"\baccelerate\b")),
    ("printer", "bitsandbytes", _words(r"bitsandbytes|\bbnb\b")),
    ("printer", "transformers modeling_ / from_pretrained", _words(r"modeling_|from_pretrained")),
    ("printer", "generate(", _words(r"\.generate\(|\bgenerate\b")),
    ("printer", "Trainer / trainer.train", _words(r"\btrainer\b|\.train\(")),
    ("printer", "peft / LoRA", _words(r"\bpeft\b|\blora\b")),
    ("printer", "diffusers / pipeline(", _words(r"diffusers|pipeline\(")),
    ("hint", "max_split_size_mb (PyTorch < 2.2's hint)", _words(r"max_split_size_mb")),
    ("hint", "expandable_segments (PyTorch >= 2.2's hint)", _words(r"expandable_segments")),
    ("hint", "neither hint", _words(r"\A(?![\s\S]*(?:max_split_size_mb|expandable_segments))")),
    ("user", "the user names a batch size", _words(r"batch[ _]?size")),
    # session 21, diagnose21b (issue #18 point 4, after rounds 68-69's five misses, all during training): words that
    # would say training / fine-tuning / generation is running, as a user reading the text would look for them
    ("run words", "train / training / trainer (a word)", _words(r"\btrain(?:ing|er|s)?\b|\btrain_\w+|\w+_train\b")),
    ("run words", "fine-tune / finetune / 微调", _words(r"fine-?tun|微调")),
    ("run words", "a training script or config named (train*.py, sft / dpo / grpo ...)",
     _words(r"\b\w*(?:train|finetune|sft|dpo|grpo|ppo)\w*\.(?:py|sh|ya?ml|json)\b")),
    ("run words", "a progress bar (it/s, s/it, %|)", _words(r"\d\s*(?:it/s|s/it)\b|\d%\|")),
    ("run words", "Epoch", _words(r"\bepochs?\b")),
    ("run words", "step / steps / global_step", _words(r"\bsteps?\b|global_step")),
    ("run words", "LoRA / QLoRA / PEFT / adapter", _words(r"lora|\bpeft\b|\badapter")),
    ("run words", "DreamBooth / textual inversion", _words(r"dreambooth|textual.inversion")),
    ("run words", "GRPO / PPO / DPO / SFT / RLHF / verl / trl", _words(r"\b(?:grpo|ppo|dpo|sft|rlhf|verl|trl)\b")),
    ("run words", "FSDP / DeepSpeed / ZeRO", _words(r"\bfsdp\b|deepspeed|\bzero-?[123]\b")),
    ("run words", "a rank prefix ([rank4]: / rank0)", _words(r"\[?rank\d+\]?:")),
    ("run words", "loss", _words(r"\bloss\b")),
    ("run words", "backward", _words(r"backward")),
    ("run words", "optimizer / Adam", _words(r"optimi[sz]er|\badamw?\b")),
    ("run words", "a batch setting (per_device_train_batch_size, -bs=, gradient_accumulation)",
     _words(r"per_device_\w*batch|gradient_accumulation|\s-bs[= ]")),
    ("run words", "generate( / model.generate / generate.py", _words(r"generate\(|generate\.py")),
    ("run words", "inference / infer (a word)", _words(r"\binfer(?:ence|ring)?\b|推理")),
    ("run words", "forward(", _words(r"forward\(|in forward\b")),
    ("run words", "any of the run words above", _words(
        r"\btrain(?:ing|er|s)?\b|\btrain_\w+|\w+_train\b|fine-?tun|微调|\d\s*(?:it/s|s/it)\b|\d%\||\bepochs?\b"
        r"|\bsteps?\b|global_step|lora|\bpeft\b|dreambooth|\b(?:grpo|ppo|dpo|sft|rlhf|verl|trl)\b|\bfsdp\b|deepspeed"
        r"|\[?rank\d+\]?:|\bloss\b|backward|optimi[sz]er|generate\(|generate\.py")),
    # session 21, diagnose21c (issue #18 point 4, after round 70's five load misses: a 65B GPTQ on one 24 GB card, a
    # 33B in fp32 on one 80 GB GPU, a Mixtral deploy, an fp32 load on an A10, an exl2 34B on a T4): what the text
    # itself carries that would say the weights do not fit — the model's size against the card's, the user's loading
    # code, a refused block the size of one whole weight tensor
    ("load words", "a parameter count in the text (7B, 65b, 8x7B, 1.5B, 70 billion; not 23085449216 B)", _words(PARAMS.pattern)),
    ("load words", "a weight dtype named (fp32 / fp16 / bf16 / float32 / int8 / 4-bit / GPTQ / AWQ / exl2 / bpw)",
     _words(DTYPE.pattern)),
    ("load words", "weights alone (count x dtype) >= the card's total (PyTorch's or a card named)",
     lambda r, f: _weights_over_card(r["text"], f, 1.0)),
    ("load words", "weights alone >= half the card's total", lambda r, f: _weights_over_card(r["text"], f, 0.5)),
    ("load words", "a card's size named in prose (24GB card, my GPU has 16 GB, T4 / A10 / 3090 ...)",
     lambda r, f: _card_named(r["text"]) is not None),
    ("load words", "a size said to be needed (needs 46GB, requires 80 GB)", _words(NEEDS.pattern)),
    ("load words", "from_pretrained", _words(r"from_pretrained")),
    ("load words", "load_in_4bit / load_in_8bit / device_map / torch_dtype (the user's loading code)",
     _words(r"load_in_(?:4|8)bit|device_map|torch_dtype")),
    ("load words", "Tried to allocate one whole weight tensor of a common shape (hidden^2, hidden x ffn, vocab x hidden)",
     _figure(lambda f: _whole_weight_tensor(f.get("requested_bytes")))),
    ("frames", "the text is the error line and nothing else (<= 6 non-blank lines, no frame, no words above)",
     lambda r, f: len([x for x in r["text"].splitlines() if x.strip()]) <= 6
     and not re.search(r'File "|Traceback|\btrain|fine-?tun|epoch|\bsteps?\b|lora|loss|backward|generate|infer|batch',
                       r["text"], re.I)),
]


def main() -> None:
    tuning, _ = public_errors.split(public_errors.load_records())
    texts = []
    for r in tuning:
        d = diagnose_text(r["text"])
        # answered "phase not stated": the load with both phases' fixes, or (since the rule this count led to) the step
        # where another framework printed the line
        if d.entry is not None and d.entry.id in (PHASE_UNSTATED_ID, FRAMEWORK_STEP_ID):
            texts.append((r, d.extracted))
    load = [(r, f) for r, f in texts if r["label"] == LOAD]
    run = [(r, f) for r, f in texts if r["label"] == RUN]
    print(f"{len(texts)} of {len(tuning)} tuning texts answered phase not stated: {len(load)} labelled the load, "
          f"{len(run)} the run, {len(texts) - len(load) - len(run)} other (not counted below)")
    print(f"\n{'group':8s} {'signal':50s} {'load':>5s} {'run':>5s}  separates?")
    movable = []
    for group, name, test in SIGNALS:
        n_load = sum(test(r, f) for r, f in load)
        n_run = sum(test(r, f) for r, f in run)
        verdict = "run only" if n_run and not n_load else ("load only" if n_load and not n_run else "")
        if verdict == "run only":
            movable.append(name)
        print(f"{group:8s} {name:50s} {n_load:5d} {n_run:5d}  {verdict}")
    print(f"\nsignals carried by run texts and by no load text: {', '.join(movable) or 'none'}")
    # the one that is, read over every tuning text (not only the phase-unstated ones): the failing line diagnose
    # matched printed by one of these frameworks, by label and by the answer's entry
    by_label: dict[tuple[str, str], int] = {}
    for r in tuning:
        d = diagnose_text(r["text"])
        if d.matched_line and FRAMEWORK_LINE.search(d.matched_line):
            key = (r["label"], d.entry.id if d.entry else "-")
            by_label[key] = by_label.get(key, 0) + 1
    print("\nevery tuning text whose failing line a non-PyTorch framework printed (label, answer's entry: texts):")
    for (label, entry), n in sorted(by_label.items(), key=lambda kv: -kv[1]):
        print(f"  {label:22s} {entry:28s} {n}")


if __name__ == "__main__":
    main()
