"""The semantic tests' paraphrase: a session's exchange, and a question about it that shares
no word with it (only its meaning finds it)."""

USER = "The charge client hammers the gateway after a decline; calm it down."
REPLY = "Reduced the backoff multiplier for the charge client from 3 to 1.5."
PARAPHRASE = "where did we soften the payment reattempts"
