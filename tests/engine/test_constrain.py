"""Grammar masks: a step's grammar rows masked together equal xgrammar's own mask of each row."""

import torch
import xgrammar as xgr

from engine.constrain import GrammarProcessor, Grammars, mask_rows

SHELL = {
    "type": "function",
    "function": {
        "name": "shell",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    },
}


def test_grammar_rows_masked_together_equal_xgrammars_mask_of_each_row(engine):
    vocab = engine.model_config.vocab_size
    compiled = Grammars(engine.tokenizer, vocab, engine.eos_ids).tool_call([SHELL])
    prefixes = ["", '<tool_call>\n{"name": "', '<tool_call>\n{"name": "shell", "arguments": {"command": "ls']
    generated = [engine.tokenizer.encode(p) for p in prefixes]
    logits = torch.randn(4, vocab, generator=torch.Generator().manual_seed(0))  # row 3: no grammar
    expected = logits.clone()
    for i, ids in enumerate(generated):
        matcher = xgr.GrammarMatcher(compiled)
        for token in ids:
            assert matcher.accept_token(token)
        bitmask = xgr.allocate_token_bitmask(1, vocab)
        matcher.fill_next_token_bitmask(bitmask)
        xgr.apply_token_bitmask_inplace(expected[i : i + 1], bitmask)
    errors = mask_rows(logits, [(i, GrammarProcessor(compiled), ids) for i, ids in enumerate(generated)])
    assert errors == {} and torch.equal(logits, expected)
    assert torch.isinf(logits[:3]).any(-1).all() and torch.isfinite(logits[3]).all()


def test_a_token_the_grammar_refuses_fails_only_its_own_row(engine):
    vocab = engine.model_config.vocab_size
    compiled = Grammars(engine.tokenizer, vocab, engine.eos_ids).tool_call([SHELL])
    logits = torch.zeros(2, vocab)
    refused = engine.tokenizer.encode("hello")  # a tool call must open with <tool_call>
    good, bad = GrammarProcessor(compiled), GrammarProcessor(compiled)
    errors = mask_rows(logits, [(0, good, []), (1, bad, refused)])
    assert list(errors) == [1] and torch.isinf(logits[0]).any() and torch.isfinite(logits[1]).all()
