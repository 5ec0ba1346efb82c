Feature: Long agent sessions keep compacting after their task message is summarised
  A single-task agent session starts with one user message and then runs hundreds of tool
  rounds. Once the first compaction has folded that user message into the summary, the history
  the harness keeps holds no user message at all. Such a window is compacted by assistant
  rounds: the most recent rounds stay verbatim, a call never leaves its result behind, and the
  older rounds are folded into the summary, which is updated rather than restarted.

  Background:
    Given the summariser answers "## Goal\n- keep the build green"
    And an inline model of 5000 tokens with 500 for output

  Scenario: a window of tool rounds keeps its two most recent rounds
    Given a history of 5 tool rounds of 1000 tokens each and the answer "done"
    When the history is assembled
    Then the history was compacted from request message 8 onward with a head of 4364 tokens
    And the assembled context holds 1140 tokens
    And the summariser was called 1 time

  Scenario: the original keeps such a window whole and falls back to emergency reduction
    Given the worker configuration {"user_less_compaction": false}
    And a history of 5 tool rounds of 1000 tokens each and the answer "done"
    When the history is assembled
    Then the history was not compacted
    And the summariser was called 0 times

  Scenario: the round trip goes on after the task message is summarised
    Given a single-task history "Fix the failing build" with 5 tool rounds of 1000 tokens each
    When the history is assembled
    And the harness keeps the summary and the messages from the reported index onward
    And 4 more tool rounds of 1000 tokens each are appended
    And the history is assembled
    Then the kept history has no user message
    And the history was compacted from request message 8 onward with a head of 4370 tokens
    And the summariser was asked to revise "## Goal\n- keep the build green"

  Scenario Outline: context::compact keeps the recent rounds that fit
    Given a history of 5 tool rounds of 1000 tokens each and the answer "done"
    And the worker configuration {"user_less_compaction": <flag>}
    When the history is compacted with options {"preserve_recent_tokens": 2000}
    Then the wire response is <response>

    Examples:
      | flag  | response |
      | true  | {"status":"ok","summary":"## Goal\\n- keep the build green","tail_start_index":8,"tokens_after":1132,"tokens_before":4364,"used_prior_summary":false} |
      | false | {"status":"ok","summary":"## Goal\\n- keep the build green","tail_start_index":null,"tokens_after":7,"tokens_before":5489,"used_prior_summary":false} |

  Scenario: a lone tool round is never compacted away from itself
    Given a history of 1 tool round of 6000 tokens
    When the history is compacted with options {"preserve_recent_tokens": 2000}
    Then the response status is "ok"
    And the response has no tail
    When the history is assembled
    Then the history was not compacted
    And the summariser was called 1 time
