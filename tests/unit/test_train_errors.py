"""The training layer's errors hang under one base, ``TrainError``, itself under ACE's one root, ``AceError``."""

from __future__ import annotations

import inspect

import train.errors as errors
from ace_env.errors import AceError
from train.errors import TrainError

#: Signals internal to the OpenAI policy (never leave it): deliberately outside the tree.
INTERNAL = {"RetryableRequest", "RefusedRequest"}


def test_every_public_train_error_derives_from_train_error_and_the_root():
    classes = {name: obj for name, obj in vars(errors).items()
               if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == errors.__name__}
    assert {"PolicyError", "EndpointError", "ExportError", "CurriculumStoreError", "CurriculumConflictError",
            "EnvironmentUseError"} <= set(classes)
    outside = [name for name, cls in classes.items()
               if name not in INTERNAL and cls is not TrainError and not issubclass(cls, TrainError)]
    assert not outside, f"train errors outside TrainError: {outside}"
    assert issubclass(TrainError, AceError)
    assert not any(issubclass(classes[name], AceError) for name in INTERNAL)  # an `except AceError` cannot swallow them
