"""The probe a plain PyTorch loop holds (`bench.probe(model, optimizer, ...)`): it marks the
forward, backward and optimizer step without syncing, counts the FLOPs once, takes peak memory
and the census every `every` steps (untimed), writes its folder then and at `close()`. What it
changes in the user's process: docs/own-loop.md's list ("What the probe changes"), kept true."""

from __future__ import annotations

import atexit
import contextlib
from collections.abc import Iterator

import torch
from torch import nn

from bench.faults import error_summary
from bench.measure import ceilings, env
from bench.modes.mode import MODES, Mode
from bench.ownloop import census, contract, folder, marks
from bench.ownloop.contract import unwrap
from bench.ownloop.counting import Counter
from bench.ownloop.row import Run, build_row
from bench.store.run_env import Ceilings

PHASE_NAMES = {"forward": "fwd", "backward": "bwd", "optimizer": "step", "step": "step"}
"""What `probe.phase` accepts -> the phase it times."""


class Probe:
    """The probe of one loop (docs/own-loop.md); build it with `bench.probe(...)`."""

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        *,
        scaler: torch.amp.GradScaler | None = None,
        every: int = 200,
        out: str | None = None,
        census: bool = True,
        warmup: int = 3,
        time_every: int = 1,
        flops: int | None = None,
        batch_size: int | None = None,
        ceilings: bool = True,
    ) -> None:
        if not isinstance(model, nn.Module):
            raise ValueError(f"model: {type(model).__name__} is not a torch.nn.Module")
        params = list(model.parameters())
        if not params:
            raise ValueError(
                f"model: {type(model).__name__} has no parameters; give the module you train"
            )
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"every={every!r}: give a positive number of steps")
        if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
            raise ValueError(f"warmup={warmup!r}: give a number of steps, 0 or more")
        if isinstance(time_every, bool) or not isinstance(time_every, int) or time_every < 1:
            raise ValueError(f"time_every={time_every!r}: give a positive number of steps")
        self.time_every = time_every
        self.model, self.optimizer = model, unwrap(optimizer)
        self.device = params[0].device.type
        self.every, self.warmup, self.census_on, self.ceilings_on = every, warmup, census, ceilings
        self.asked = contract.asked()
        self.seed = contract.seed()
        if self.asked is not None and contract.sets_tf32(self.asked):
            # TF32 is what tells the fp32 mode from the tf32 one, so those two set it, for the
            # whole run, forward and backward alike (one process runs one mode under the
            # driver). An autocast mode keeps the script's own choice: its matmuls run in the
            # low dtype anyway, and a script that switched TF32 on for the rest (nanoGPT's
            # train.py) must not be slowed by the probe turning it off.
            tf32 = MODES[self.asked].tf32
            torch.backends.cuda.matmul.allow_tf32 = tf32
            torch.backends.cudnn.allow_tf32 = tf32
        self._scaler = scaler
        self.clock = marks.reusing_clock_for(self.device)
        self.counter = Counter(given=flops)
        machine = env.collect(self.device)
        self.path = folder.create(out, str(machine["gpu"]), machine.get("commit"))
        self.run = Run(
            model=model, optimizer=self.optimizer, device=self.device, seed=self.seed,
            batch_size=batch_size, warmup=warmup, every=every,
        )  # fmt: skip
        config = {
            "device": self.device, "model": self.run.model_name, "modes": [],
            "optimizers": [type(self.optimizer).__name__], "seed": self.seed,
            "warmup": warmup, "every": every, "time_every": time_every, "census": census,
            "mode_asked": self.asked,
        }  # fmt: skip
        self.info = folder.start(self.path, machine, config)
        self._n = 0
        self._cur: marks.StepRecord | None = None
        self._pending: list[marks.StepRecord] = []
        self._manual = False
        self._phase = ""
        self._census_due = False
        self._sniff: contract.Settings | None = None
        self._sniffer: torch.utils.hooks.RemovableHandle | None = None
        self._inputs: tuple | None = None
        self._closed = self._closing = False
        self._handles: list = []
        self.attach()
        atexit.register(self.close)

    def attach(self) -> None:
        """Hook the probe to the model and the optimizer (the constructor does)."""
        if not self._handles:
            # Never traced by torch.compile: given the module inside a compiled one (or an
            # optimizer whose step is compiled), dynamo would trace the hooks into its graph,
            # their clock marks made once at tracing, or break the graph inside them. Disabled,
            # they run as plain Python and the graph ends around them.
            eager = torch.compiler.disable
            self._handles = [
                self.model.register_forward_pre_hook(eager(self._fwd_pre), with_kwargs=True),
                self.model.register_forward_hook(eager(self._fwd_post)),
                self.optimizer.register_step_pre_hook(eager(self._opt_pre)),
                self.optimizer.register_step_post_hook(eager(self._opt_post)),
            ]

    def detach(self) -> None:
        """Remove the probe's hooks (`close` does; a benchmark of the probe's own cost does it
        between the windows it times without the probe)."""
        for h in self._handles:
            h.remove()
        self._handles = []

    # The mode, for a plain loop that writes it once.
    def _mode(self) -> Mode | None:
        """The mode the driver asked for, None outside the driver."""
        return MODES[self.asked] if self.asked else None

    def autocast(self) -> contextlib.AbstractContextManager:
        """The forward's autocast for the mode the driver asked for (its TF32 the probe set for
        the whole run when it was made); outside the driver, nothing changes."""
        mode = self._mode()
        if mode is None:
            return contextlib.nullcontext()
        reason = contract.unsupported_reason(mode.name)
        if reason is not None:
            raise ValueError(f"{contract.variable()}={mode.name}: {reason}")
        dtype = mode.autocast_dtype
        return torch.autocast(self.device, dtype=dtype or torch.float32, enabled=dtype is not None)

    def scaler(self) -> torch.amp.GradScaler:
        """A GradScaler enabled as the mode wants it (disabled outside the driver unless one was
        handed in), which the probe then reads."""
        if self._scaler is None:
            mode = self._mode()
            self._scaler = torch.amp.GradScaler(self.device, enabled=bool(mode and mode.scale_loss))
        return self._scaler

    # The step.
    @contextlib.contextmanager
    def step(self) -> Iterator[Probe]:
        """One optimizer step of the user's loop."""
        self.begin_step()
        try:
            yield self
        except BaseException as exc:
            self.abort(exc)
            raise
        self.end_step()

    def begin_step(self) -> None:
        if self._closed:
            raise ValueError("the probe is closed; make a new one for a new run")
        if self._cur is not None:
            raise ValueError("probe.step() inside another step: close the first one")
        self._n += 1
        n = self._n
        special = n % self.every == 0
        # The step after a special one follows the folder's write, which waited for the GPU:
        # it starts on an idle device, so it is not timed either.
        after = n > 1 and (n - 1) % self.every == 0
        counting = self.counter.wants(n)
        # Only every `time_every`-th step is marked; the ones that read memory, take the census
        # or count FLOPs always are.
        light = n % self.time_every != 0 and not (special or counting or n == 1)
        self._cur = marks.StepRecord(
            index=n,
            timed=n > self.warmup and not (counting or special or after or light) and n != 1,
            memory=self.device == "cuda" and (special or n == 1),
            light=light,
        )
        self._census_due = self.census_on and special
        self._drain(block=False)
        if counting:
            self.counter.start(self.device)
        self._phase = ""
        self._mark("other")

    def end_step(self) -> None:
        cur = self._cur
        if cur is None:
            raise ValueError("probe.end_step() without probe.begin_step()")
        if self._phase == "fwd":
            self.counter.forward_ends()
        if not cur.light:
            cur.mark(self.clock, None)  # the step's end: what follows is not timed
        s = self._scaler
        if s is not None and s.is_enabled() and getattr(s, "_scale", None) is not None:
            # GradScaler's scale after its update, copied after the step's last mark, so the
            # copy is no part of the step's time (as the harness's ScaleWatch marks after the
            # step). To the host without waiting (a non-blocking copy from the GPU lands in
            # pinned memory), read once the event after it has completed; get_scale() would
            # synchronize. On the CPU a clone, since update() changes the scale in place.
            scale = s._scale.detach()
            if scale.is_cuda:
                cur.scale = scale.to("cpu", non_blocking=True)
                cur.copied = self.clock.mark()
            else:
                cur.scale = scale.clone()
        self.counter.stop()
        self._pending.append(cur)
        self._cur = None
        if cur.index % self.every == 0:
            self.flush()

    def abort(self, exc: BaseException) -> None:
        """The user's step raised: keep what was measured, say why it ended."""
        self.counter.stop()
        if self._sniffer is not None:
            self._sniffer.remove()
        self._cur = None
        self.run.error = error_summary(exc) if isinstance(exc, Exception) else type(exc).__name__
        self.close()

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Mark a region of the step yourself (`forward`, `backward`, `optimizer`); once you
        do, the hooks time nothing and only the regions you mark are phases."""
        self.mark(name)
        try:
            yield
        finally:
            self.mark("other")

    def mark(self, name: str) -> None:
        """Start phase `name` (`forward`, `backward`, `optimizer`, or `other`) here; it lasts
        until the next mark. What a framework's callback calls from its own hooks."""
        if name not in PHASE_NAMES and name != "other":
            raise ValueError(f"phase {name!r}: choose from {', '.join(PHASE_NAMES)}")
        self._manual = True
        self._mark(PHASE_NAMES.get(name, "other"))

    def set_settings(self, settings: contract.Settings) -> None:
        """The mode as the framework states it (a callback that knows it before the first
        forward); otherwise the first forward reads it."""
        self._check_scaler(settings.scaler)
        self.run.set_settings(settings)
        self.info["config"]["modes"] = [self.run.mode]

    def log(self, **metrics: object) -> None:
        """Metrics of the run at this step (a training loss, a held-out one, an accuracy).
        Tensors are kept as they are and read when the folder is written, not now (a read would
        synchronize)."""
        self.run.log(self._n, metrics)

    # Marks and hooks.
    def _mark(self, phase: str) -> None:
        cur = self._cur
        if cur is None or cur.light or phase == self._phase:
            return
        if self._phase == "fwd":
            self.counter.forward_ends()
        if phase == "fwd":
            self.counter.forward_begins()
        if phase == "step" and self._census_due:
            # Here the gradients are final (GradScaler's step unscales them before it calls
            # the optimizer's, a callback marks the optimizer after its unscale_).
            self._census_due = False
            rows, ms = census.take(self.model, cur.index)
            self.run.census(rows, ms)
        self._phase = phase
        cur.mark(self.clock, phase)

    def _fwd_pre(self, module: nn.Module, args: tuple, kwargs: dict) -> None:
        if self._cur is None:
            return
        if self.run.settings is None and self._sniff is None:
            self._first_forward((*args, *kwargs.values()))
        if not self._manual:
            self._mark("fwd")

    def _check_scaler(self, on: bool) -> None:
        mode = self._mode()
        if mode is not None and mode.scale_loss and not on:
            raise ValueError(
                f"{contract.variable()}={mode.name} scales the loss, and the probe has no enabled "
                "GradScaler: pass scaler= or use probe.scaler()"
            )

    def _first_forward(self, inputs: tuple) -> None:
        """Read the mode the first forward runs under. A wrapper may enter autocast inside
        the model's own forward (accelerate patches `model.forward` so), after this hook: the
        modules called inside are watched too, until the forward ends (`_fwd_post`). Where
        autocast is already on there is nothing more to see, and no global hook is added: one
        present while torch.compile traces the forward is traced with it, and its removal then
        costs a recompile."""
        on = self._scaler is not None and self._scaler.is_enabled()
        self._check_scaler(on)
        self._inputs = inputs
        self._sniff = contract.read_settings(self.device, next(self.model.parameters()).dtype, on)
        if self._sniff.autocast_dtype is not None:
            return

        def inner(module: nn.Module, args: tuple) -> None:
            if self._sniff is not None and self._sniff.autocast_dtype is None:
                seen = contract.read_settings(self.device, self._sniff.param_dtype, on)
                if seen.autocast_dtype is not None:
                    self._sniff = seen

        self._sniffer = nn.modules.module.register_module_forward_pre_hook(inner)

    def _settle(self) -> None:
        """The first forward ended: its mode is the run's."""
        if self._sniffer is not None:
            self._sniffer.remove()
            self._sniffer = None
        self.run.set_settings(self._sniff, self._inputs)
        self.info["config"]["modes"] = [self.run.mode]
        self._sniff = self._inputs = None

    def _fwd_post(self, module: nn.Module, args: tuple, output: object) -> None:
        if self._sniff is not None:
            self._settle()
        if self._cur is not None and not self._manual:
            self._mark("bwd")

    def _opt_pre(self, optimizer: torch.optim.Optimizer, args: tuple, kwargs: dict) -> None:
        if self._cur is not None and not self._manual:
            self._mark("step")

    def _opt_post(self, optimizer: torch.optim.Optimizer, args: tuple, kwargs: dict) -> None:
        if self._cur is None:
            return
        self._cur.stepped = True
        if not self._manual:
            self._mark("other")

    # Reading and writing.
    def _drain(self, block: bool) -> None:
        """Read every pending step whose marks have times (all of them with `block`)."""
        if block and self._pending and marks.is_device_clock(self.clock):
            self.clock.finish()
        while self._pending and (block or self._pending[0].ready()):
            rec = self._pending.pop(0)
            self.run.add(rec, self.clock)
            marks.release(self.clock, rec)

    def flush(self) -> None:
        """Write the folder as it stands (reads every pending step: it synchronizes)."""
        self._drain(block=True)
        if self.run.batch_size:
            self.info["config"]["batch_sizes"] = [self.run.batch_size]
        row, samples = build_row(self.run, self.counter, self._ceilings())
        folder.write(
            self.path, row, samples,
            metrics=self.run.metric_rows(), scale=self.run.scale_rows, census=self.run.census_rows,
        )  # fmt: skip
        folder.save_env(self.path, self.info)

    def _ceilings(self) -> Ceilings:
        """The GPU's matmul ceilings, measured once, after the run's steps (never inside one)."""
        if (
            self.ceilings_on
            and self.device == "cuda"
            and self._closing
            and "ceilings" not in self.info
        ):
            measured = ceilings.measure(self.device, matmul_n=8192, copy_mib=256)
            self.info["ceilings"] = measured.record()
        return Ceilings.from_record(self.info.get("ceilings"))

    def close(self) -> None:
        """Write the folder and unhook. Safe to call twice; called at exit too."""
        if self._closed:
            return
        self._closing = True
        try:
            self.flush()
            folder.finish(self.path, self.info)
        finally:
            self._closed = True
            self.detach()
            atexit.unregister(self.close)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def folder(self) -> str:
        return str(self.path)


def probe(model: nn.Module, optimizer: torch.optim.Optimizer, **options: object) -> Probe:
    """`bench.probe(model, optimizer, scaler=..., every=200, out=...)`: see `Probe`."""
    return Probe(model, optimizer, **options)  # type: ignore[arg-type]
