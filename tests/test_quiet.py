"""Known warnings of other packages stay out of the output; AMPBENCH_DEBUG=1 shows them."""

import warnings

import pytest

from bench import quiet
from bench.cli import main


def _shown(category: type[Warning], message: str, module: str) -> bool:
    """Whether a warning raised from `module` gets past this process's filters."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # below the filters installed after it
        quiet.quiet()
        warnings.warn_explicit(message, category, f"{module}.py", 1, module=module)
    return bool(caught)


TF32 = (
    "TensorFloat32 tensor cores for float32 matrix multiplication available but not enabled. "
    "Consider setting `torch.set_float32_matmul_precision('high')` for better performance."
)


@pytest.mark.parametrize(
    ("category", "message", "module"),
    [
        (UserWarning, TF32, "torch._inductor.compile_fx"),
        (DeprecationWarning, "`torch.jit.script_method` is deprecated. Please switch", "torch.jit"),
        (
            DeprecationWarning,
            "torch.get_autocast_gpu_dtype() is deprecated. Please use torch.get_autocast_dtype",
            "torchao.float8.float8_linear",
        ),
        (SyntaxWarning, "invalid escape sequence '\\.'", "/site/torchao/quantization/quant_api"),
    ],
)
def test_known_warnings_are_left_out_unless_debug(monkeypatch, category, message, module):
    monkeypatch.delenv(quiet.DEBUG_VAR, raising=False)
    assert not _shown(category, message, module)
    monkeypatch.setenv(quiet.DEBUG_VAR, "1")
    assert _shown(category, message, module)


def test_other_warnings_still_show(monkeypatch):
    monkeypatch.delenv(quiet.DEBUG_VAR, raising=False)
    assert _shown(UserWarning, TF32, "bench.plan.step")  # the project's own: not hidden
    assert _shown(UserWarning, "something else", "torch._inductor.compile_fx")
    assert _shown(SyntaxWarning, "invalid escape sequence '\\.'", "/work/bench/mine")


def test_the_command_line_installs_the_filters(monkeypatch, capsys):
    called = []
    monkeypatch.setattr(quiet, "quiet", lambda: called.append(True))
    with pytest.raises(SystemExit):
        main(["--version"])
    assert called


def test_the_test_session_takes_the_same_list(monkeypatch):
    from _pytest.config import parse_warning_filter

    monkeypatch.delenv(quiet.DEBUG_VAR, raising=False)
    lines = quiet.pytest_filters()
    assert len(lines) == len(quiet.KNOWN)
    for line, known in zip(lines, quiet.KNOWN, strict=True):
        action, message, category, module, _ = parse_warning_filter(line, escape=False)
        assert (action, message, category, module) == (
            "ignore",
            known.message,
            known.category,
            known.module,
        )
    monkeypatch.setenv(quiet.DEBUG_VAR, "1")
    assert quiet.pytest_filters() == []


def test_this_session_left_them_out(pytestconfig):
    # tests/conftest.py gave pytest the list (none when the session runs with AMPBENCH_DEBUG=1).
    assert set(quiet.pytest_filters()) <= set(pytestconfig.getini("filterwarnings"))
