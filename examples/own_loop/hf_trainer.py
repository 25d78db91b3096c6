"""A transformers `Trainer` run measured by ampbench's callback: a small GPT-2 (random weights,
built from its config: nothing is downloaded) learning the bundled Shakespeare text by
characters, evaluated on its held-out split.

    python examples/own_loop/hf_trainer.py --steps 200                # one run, measured
    ./run_bench.sh sweep -- python examples/own_loop/hf_trainer.py  # every mode, 3 seeds

Alone it writes one run folder (a new one under ampbench's runs/, or --out); under `ampbench
modes` the driver sets the mode, the seed and the folder (AMPBENCH_MODE, AMPBENCH_SEED,
AMPBENCH_OUT) and `precision_args()` turns the mode into the Trainer's `fp16` / `bf16` /
`tf32`.
"""

from __future__ import annotations

import argparse
import os
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is fetched: the model is built here
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

from bench.data.sources import generator, get
from bench.ownloop import contract
from bench.ownloop.hf import ProbeCallback, precision_args

SIZES = {  # name -> (layers, width, heads, context)
    "tiny": (1, 32, 2, 32),
    "small": (4, 256, 4, 128),
}


class Windows(torch.utils.data.Dataset):
    """Causal-LM examples as the Trainer takes them: the model shifts `labels` itself."""

    def __init__(self, rows: torch.Tensor) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.rows[i], "labels": self.rows[i]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", choices=SIZES, default="small")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--eval-batches", type=int, default=20)
    p.add_argument("--every", type=int, default=100, help="the probe's memory and census period")
    p.add_argument("--out", default=None, help="the run folder (AMPBENCH_OUT under the driver)")
    a = p.parse_args()
    layers, width, heads, context = SIZES[a.size]
    seed = contract.seed()
    torch.manual_seed(seed)
    cuda = torch.cuda.is_available()
    text = get("shakespeare")
    config = GPT2Config(
        vocab_size=text.shape.vocab, n_positions=context, n_embd=width, n_layer=layers,
        n_head=heads, use_cache=False,
    )  # fmt: skip
    model = GPT2LMHeadModel(config)
    gen = generator("cpu", seed)
    train_rows, _ = text.train_batch(a.steps * a.batch_size, context, gen, "cpu")
    held = torch.cat([x for x, _ in text.heldout(context, a.batch_size, "cpu")[: a.eval_batches]])
    args = TrainingArguments(
        output_dir=tempfile.mkdtemp(prefix="hf_trainer_"),  # it saves nothing: save_strategy="no"
        max_steps=a.steps, per_device_train_batch_size=a.batch_size,
        per_device_eval_batch_size=a.batch_size, learning_rate=1e-3, warmup_steps=0,
        eval_strategy="steps", eval_steps=a.eval_every, logging_steps=a.eval_every,
        save_strategy="no", report_to="none", disable_tqdm=True,
        seed=seed, data_seed=seed,
        use_cpu=not cuda, dataloader_num_workers=0,
        **precision_args(),
    )  # fmt: skip
    trainer = Trainer(
        model=model, args=args, train_dataset=Windows(train_rows), eval_dataset=Windows(held),
        # No eval_on_start above: the callback asks for the evaluation before the first step.
        callbacks=[ProbeCallback(every=a.every, out=a.out)],
    )  # fmt: skip
    trainer.train()
    trainer.evaluate()  # the final held-out loss, logged after the last step


if __name__ == "__main__":
    main()
