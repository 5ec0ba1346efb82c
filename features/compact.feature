Feature: Folding the older part of a conversation into one summary
  A harness whose history has outgrown the model asks for the head of the history to be
  summarised while the most recent turns stay verbatim. Only one summarisation of a history runs
  at a time; a caller that finds the history's lease held is told to come back later.

  Background:
    Given the router knows model "big" with a 200000 token window and 8000 output tokens
    And the summariser answers "## Goal\n- finish the migration"

  Scenario: a long head is summarised and the two most recent turns stay verbatim
    Given a history of one 9000-token question and the turns "q2", "q3"
    When the history is compacted for model "big"
    Then the wire response is {"status":"ok","summary":"## Goal\n- finish the migration","tail_start_index":2,"tokens_after":107,"tokens_before":9049,"used_prior_summary":false}
    And the summariser was called 1 time
    And no lease is left behind

  Scenario: keeping no turn verbatim summarises everything
    Given a history of one 9000-token question and the turns "q2", "q3"
    When the history is compacted for model "big" with options {"tail_turns": 0}
    Then the wire response is {"status":"ok","summary":"## Goal\n- finish the migration","tail_start_index":null,"tokens_after":7,"tokens_before":9149,"used_prior_summary":false}

  Scenario: a prior summary is updated rather than replaced
    Given a history of one 9000-token question and the turns "q2", "q3"
    When the history is compacted for model "big" with options {"previous_summary": "## Goal\n- start the migration"}
    Then the response status is "ok"
    And the response reports that a prior summary was used
    And the summariser was asked to revise "## Goal\n- start the migration"

  Scenario: a short history has nothing to compact
    Given a history of the turns "q1", "q2"
    When the history is compacted for model "big"
    Then the wire response is {"status":"empty"}
    And the summariser was called 0 times
    And no lease is left behind

  Scenario: a blank summary counts as nothing to compact
    Given the summariser answers "  \n "
    And a history of one 9000-token question and the turns "q2", "q3"
    When the history is compacted for model "big"
    Then the wire response is {"status":"empty"}

  Scenario Outline: a summariser that cannot help makes compaction unavailable
    Given the summariser fails with "<kind>" "<detail>"
    And a history of one 9000-token question and the turns "q2", "q3"
    When the history is compacted for model "big"
    Then the wire response is {"status":"overflow"}
    And no lease is left behind

    Examples:
      | kind        | detail                            |
      | unavailable | function_not_found: router::chat  |
      | failed      | "429 rate limited"                |
      | failed      | summariser stream error: ctx overflow |

  Scenario: a head too large for 32 bounded calls is refused before any call
    Given a history of one 3000-token question, the reply "r0" and the turn "q2"
    When the history is compacted for an inline model of 1000 tokens with 500 for output
    Then the wire response is {"status":"overflow"}
    And the summariser was called 0 times

  Scenario Outline: a live claim makes the caller wait; an expired one is taken over
    Given a history of one 9000-token question and the turns "q2", "q3"
    And another holder claimed the history at 1000000 ms
    And the clock reads <now> ms
    When the history is compacted for model "big"
    Then the response status is "<status>"
    And the summariser was called <calls> times

    Examples:
      | now     | status | calls |
      | 1000000 | busy   | 0     |
      | 1299999 | busy   | 0     |
      | 1300000 | ok     | 1     |
      | 1300001 | ok     | 1     |

  Scenario: a lease store that cannot be read never grants the lease
    Given a history of one 9000-token question and the turns "q2", "q3"
    And the lease store is unreadable
    When the history is compacted for model "big"
    Then the wire response is {"status":"busy"}
    And the summariser was called 0 times

  Scenario: a request without messages is refused with the stable code
    When a request without messages is compacted for model "big"
    Then the call fails with "handler error: context/invalid_request: messages is required"

  Scenario: assemble compacts an over-budget history in two bounded calls
    Given the summariser answers "## Goal\n- ship the feature"
    And a history of two 3000-token questions with replies, then the turn "latest question"
    When the history is assembled with the system prompt "Base prompt." for an inline model of 5000 tokens with 500 for output
    Then the summariser was called 2 times
    And the assembled system prompt is "Base prompt.\n\n# Conversation summary\n\n## Goal\n- ship the feature"
    And the assembled context holds 105 tokens from request message 3 onward
    And no lease is left behind

  Scenario: assemble cannot compact while another holder has the history
    Given a history of two 3000-token questions with replies, then the turn "latest question"
    And another holder claimed the history at 1000000 ms
    When the history is assembled without a system prompt for an inline model of 5000 tokens with 500 for output
    Then the call fails with "handler error: context/overflow: assembled context requires 6154 tokens but usable budget is 4000"
    And the summariser was called 0 times
