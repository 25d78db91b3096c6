"""The old name of `bench.ownloop.contract` (`from bench.ownloop import recipe`, then
`recipe.seed()`, as the own-loop docs once told users to write): its names, with a
DeprecationWarning, for a release."""

import warnings

from bench.ownloop.contract import (  # noqa: F401  the names a script may still read here
    MODE,
    OLD_MODE,
    OUT,
    SEED,
    SUPPORTED_KINDS,
    Settings,
    asked,
    read_settings,
    seed,
    unsupported_reason,
    unwrap,
    variable,
)

warnings.warn(
    "bench.ownloop.recipe is now bench.ownloop.contract "
    "(`from bench.ownloop import contract`); the old name will go",
    DeprecationWarning,
    stacklevel=2,
)
