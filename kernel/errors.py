"""The one exception type for problems a user can fix (bad input, missing files)."""


class RulerError(Exception):
    """A user-fixable problem; the CLI prints it without a traceback and exits non-zero."""


class TooShortError(RulerError):
    """Even the smallest haystack of a task does not fit the requested length."""

    def __init__(self, task: str, max_seq_length: int, minimum: int,
                 counted: str = "prompt + tokens_to_generate"):
        self.task, self.max_seq_length, self.minimum = task, max_seq_length, minimum
        super().__init__(
            f"task {task!r} cannot be built at length {max_seq_length}: its smallest sample "
            f"needs {minimum} tokens ({counted}). Use a length >= {minimum}."
        )


class IncompleteFetch(RulerError):
    """A fetch that got less than it was asked for (some of the essays): it says what failed
    and what it kept or wrote. `source` is what is at the destination now (None: nothing),
    for `ruler sources fetch` to show before the message (and exit 1)."""

    source: object = None
