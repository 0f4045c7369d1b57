"""RULERv2's fixed strings, byte for byte as NeMo-Skills writes them.

Upstream: NVIDIA-NeMo/Skills `nemo_skills/dataset/ruler2/prepare_niah.py` (8779b75),
`prepare_mmlu.py` and `prepare_qa.py` (5536f54), instruct prompts (`--prompt_type instruct`:
no answer prefix). The catalog (`ruler.catalog.tasks`) ties them to the 12 tasks; the
generators fill them in. Only the variants the 12 tasks use are here.
"""

from __future__ import annotations

# --- NIAH (mk_niah_basic, mv_niah_basic): distractor needles as the haystack ------------------

#: One value asked for (num_needle_q * num_needle_v == 1): `type_needle_v` loses its "s".
NIAH_SINGLE = (
    "A special magic {type_needle_v} is hidden within the following text. Make sure to "
    "memorize it. I will quiz you about the {type_needle_v} afterwards.\n{context}\nWhat is the "
    "special magic {type_needle_v} for {query} mentioned in the provided text? The special "
    "magic {type_needle_v} for {query} mentioned in the provided text is")
NIAH_MULTIPLE = (
    "Some special magic {type_needle_v} are hidden within the following text. Make sure to "
    "memorize them. I will quiz you about the {type_needle_v} afterwards.\n{context}\nWhat are "
    "all the special magic {type_needle_v} for {query} mentioned in the provided text? The "
    "special magic {type_needle_v} for {query} mentioned in the provided text are")
#: A needle and a haystack line alike ("numbers" even where one value is asked for).
NIAH_NEEDLE = "One of the special magic {type_needle_v} for {key} is: {value}."

# --- MMLU and HotpotQA: instruction + items, then the (few-shot block and the) problem -------

#: `context` is the instruction, a blank line and the items joined by blank lines.
TOTAL = "{context}\n\n{example}{problem}"
ITEM_SEPARATOR = "\n\n"

MMLU_QUESTION = "Question {i}: {question}"
MMLU_CONTEXT = {
    "retrieve": "Below are some questions. I will ask you to copy one of them. Please copy and "
                "paste the question you find.",
    "niah": "Below are some questions. I will ask you to copy some of them. Please copy and "
            "paste the questions you find.",
    # The braces are escaped with backslashes in upstream's text: `\boxed\{\}`.
    "solve": "Below are some questions. I will ask you to solve one of them. Please solve the "
             "question you find and make sure to put the answer (and only answer) inside "
             "\\boxed\\{\\}.",
}
#: (task_type, algo_type) -> the problem; `{order}` is "" or an ordinal + " (1 indexed) ".
MMLU_PROBLEM = {
    ("retrieve", "single"): "Please copy the {order}Question {i} from the context.",
    ("retrieve", "2steps"): "Please first copy all the Question {i} from the context and then "
                            "copy the {order}Question {i} at the end.",
    ("niah", "single"): "Please find and copy all the Question {i} from the context.",
    ("solve", "single"): "Please solve the Question {i} from the context with an answer from "
                         "A, B, C, D.",
    ("solve", "2steps"): "Please copy the Question {i} from the context and then solve it with "
                         "an answer from A, B, C, D.",
}
#: A solved few-shot example (solve tasks): the problem, then this.
MMLU_EXAMPLE_TAIL = {
    "single": "\nSolution:{solution}",
    "2steps": "\nQuestion {i}: {question}\nSolution:{solution}",
}
MMLU_SOLUTION = " \\boxed{{{letter}}}"
MMLU_CHOICES = "{question}\nA. {c0}\nB. {c1}\nC. {c2}\nD. {c3}"
ORDER = "{ordinal} (1 indexed) "
FEWSHOT = ("Here are some examples to help you understand the task:\n\n{examples}\n\n"
           "Here is the actual task you need to solve:\n\n")

QA_DOCUMENT = "Document {i}:\n{text}"
#: HotpotQA paragraph text: title, newline, its sentences concatenated.
QA_PARAGRAPH = "{title}\n{body}"
QA_CONTEXT = {
    ("retrieve", "doc"): "Below are some documents. I will give you a text at the end. Please "
                         "find the document index of the text. Only give me the index without "
                         "any document contents.",
    ("retrieve", "question"): "Below are some documents. I will give you a question at the "
                              "end. Please find the index of the most relevant document that "
                              "can help answer the question. Only give me the index without "
                              "any document contents.",
    ("solve", "single"): "Below are some documents. I will ask you to answer a question based "
                         "on the documents. Please answer the question.",
    ("solve", "2steps"): "Below are some documents. I will ask you to answer a question based "
                         "on the documents. Please answer the question.",
}
QA_PROBLEM = {
    ("retrieve", "doc"): "Text: {text}\nMost relevant document index:",
    ("retrieve", "question"): "Question: {question}\nIndex of the most relevant document that "
                              "can help answer the question:",
    ("solve", "single"): "Please answer the following question based on the documents.\n\n"
                         "Question: {question}",
    ("solve", "2steps"): "Please first find and copy paste the documents relevant to the "
                         "following question and then answer it based on the documents you "
                         "find.\n\nQuestion: {question}",
}
