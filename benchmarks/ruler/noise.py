"""The noise haystack unit shared by niah (type_haystack: noise) and vt."""

#: Upstream's 5-sentence noise block; `num_haystack` counts copies of it, joined by "\n".
NOISE_SENTENCE = ("The grass is green. The sky is blue. The sun is yellow. Here we go. "
                  "There and back again.")
