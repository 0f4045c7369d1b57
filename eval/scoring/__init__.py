"""`ruler score`: predictions of `ruler eval` or of any framework (`prediction_readers`, which
return a `prediction_source`) scored against the dataset's rows (`score`)."""
