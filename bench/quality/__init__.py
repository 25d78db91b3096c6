"""The time-to-quality study (docs/quality.md), in the studies' one shape: its settings (`config`);
its measuring, a workload sized to real data and its batches (`feed`), one run and its GradScaler
check (`train`), its tables; the verdicts over its looks (`looks`); the job and its one-commit
guard (`job`, `commit`); its report (`render`, no torch)."""
