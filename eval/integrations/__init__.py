"""Use a build from other evaluation frameworks, with RULER's prompts and metrics.

The readers of their outputs are `ruler score`'s plug-ins (`READER` in each module, listed by
address in `ruler.eval.scoring.prediction_readers`), the two exports `ruler export`'s
(`ruler.eval.integrations.exporters`): scoring and the export command depend on no module
here. The names and card texts both sides share live in `ruler.cards`, so the dataset card
never imports this package. lm_eval and inspect_ai are imported only inside the functions
that need them.
"""
