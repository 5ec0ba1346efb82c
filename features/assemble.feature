Feature: Assembling a model-ready context that fits the budget
  A harness sends its whole history and the target model; the worker returns the system prompt
  and the messages to send, never more than the usable budget. Oversized results are capped,
  old verbose outputs pruned, and as a last resort the largest results are replaced by a
  reference the caller can use to retrieve them from its own transcript.

  Background:
    Given a user turn "task" at 1
    And a call "c1" to "shell::run" at 2
    And a result of 20000 "x" characters for call "c1" from "shell::run" at 3
    And an assistant reply "ok" at 4
    And a user turn "next" at 5
    And a user turn "done" at 6

  Scenario: a large catalogue model leaves the history untouched
    Given the router knows model "big" with a 200000 token window and 8000 output tokens
    When the history is assembled for model "big"
    Then the usable budget is 172000
    And the token count is 5166
    And applied is {"capped_parts":0,"capped_tokens":0,"compacted":false,"initial_token_count":5166,"pruned":false,"pruned_tokens":0}
    And the returned messages equal the request messages

  Scenario: pruning alone brings the history under a small budget
    Given the worker configuration {"protect_recent_tokens": 0, "min_free_tokens": 1}
    When the history is assembled for an inline model of 5000 tokens with 500 output tokens
    Then the usable budget is 4000
    And the token count is 185
    And applied is {"capped_parts":0,"capped_tokens":0,"compacted":false,"initial_token_count":5166,"pruned":true,"pruned_tokens":4982}

  Scenario: emergency reduction replaces the result with a reference
    Given the worker configuration {"protect_recent_tokens": 0, "min_free_tokens": 1}
    And the options {"allow_prune": false, "allow_compaction": false}
    When the history is assembled for an inline model of 5000 tokens with 500 output tokens
    Then the token count is 310
    And applied is {"capped_parts":0,"capped_tokens":0,"compacted":false,"initial_token_count":5166,"pruned":true,"pruned_tokens":4856}
    And message 2 is a function_result_reference with sha256 "3805744db64523e8d5909e9b23d36547210b68fde2efe52c1ee1a3d7f2769d36"

  Scenario: protected functions still give way to emergency reduction
    Given the worker configuration {"protect_recent_tokens": 0, "min_free_tokens": 1}
    And the options {"protected_functions": ["shell::run"], "allow_compaction": false}
    When the history is assembled for an inline model of 5000 tokens with 500 output tokens
    Then the token count is 310
    And message 2 is a function_result_reference with sha256 "3805744db64523e8d5909e9b23d36547210b68fde2efe52c1ee1a3d7f2769d36"

  Scenario: a per-call cap rewrites the oversized result
    Given the router knows model "big" with a 200000 token window and 8000 output tokens
    And the options {"max_result_tokens": 4000}
    When the history is assembled for model "big"
    Then the token count is 3766
    And applied is {"capped_parts":1,"capped_tokens":1400,"compacted":false,"initial_token_count":5166,"pruned":false,"pruned_tokens":0}
    And message 2 contains "[…result capped: was ~5000 tokens; middle omitted; re-call shell::run with narrower arguments if the omitted middle is needed]"

  Scenario: a model that cannot see images gets a marker instead
    Given the router knows model "blind" with a 200000 token window and 8000 output tokens
    And a user message with a PNG image of 400 base64 characters at 7
    When the history is assembled for model "blind"
    Then message 6 reads "[image omitted: model does not support vision]"

  Scenario: custom messages never reach the model
    Given a custom "ui_marker" message "app-facing bookkeeping" at 7
    When the history is assembled for an inline model of 200000 tokens with 8000 output tokens
    Then the response has 6 messages
    And the custom tokens are 0

  Scenario: a context that cannot fit is refused with the stable code
    Given the worker configuration {"min_free_tokens": 1000000000}
    And the options {"reserved_tokens": 4400, "allow_compaction": false}
    When the history is assembled for an inline model of 5000 tokens with 500 output tokens
    Then the call fails with "handler error: context/overflow: assembled context requires 310 tokens but usable budget is 100"

  Scenario: a request without messages is refused with the stable code
    Given the request has no messages member
    When the history is assembled for an inline model of 5000 tokens with 500 output tokens
    Then the call fails with "handler error: context/invalid_request: messages is required"
