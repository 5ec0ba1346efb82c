Feature: Pruning old function outputs without summarising
  A harness trims a long history cheaply: old or verbose function outputs become a one-line
  placeholder that names the function and the size it had, while the most recent user turns,
  a window of the newest outputs and protected functions stay verbatim. Nothing is ever removed.

  Background:
    Given a user turn "first" at 1
    And a result of 8000 "x" characters from call "c2" to "shell::run" at 2
    And a user turn "second" at 3
    And a result of 8000 "x" characters from call "c4" to "shell::run" at 4
    And a user turn "third" at 5

  Scenario: an old verbose output is replaced and the latest turn is exempt
    When the history is pruned with options {"protect_recent_tokens": 100, "min_free_tokens": 1, "max_output_chars": 100}
    Then the stats are 1982 tokens, 1 parts, 1 scanned
    And message 1 reads "[output of shell::run pruned: was ~2000 tokens; re-call it if still needed]"
    And message 3 still holds 8000 characters
    And the response has 5 messages

  Scenario: pruning the pruned history again frees nothing
    When the history is pruned with options {"protect_recent_tokens": 100, "min_free_tokens": 1, "max_output_chars": 100}
    And the returned history is pruned again with the same options
    Then the stats are 0 tokens, 0 parts, 1 scanned

  Scenario Outline: the minimum saving guards the whole pass
    When the history is pruned with options {"protect_recent_tokens": 0, "protected_user_turns": 1, "max_output_chars": 100, "min_free_tokens": <min_free>}
    Then the stats are <tokens> tokens, <parts> parts, 2 scanned

    Examples:
      | min_free | tokens | parts |
      | 1        | 3964   | 2     |
      | 3964     | 3964   | 2     |
      | 3965     | 0      | 0     |

  Scenario: worker configuration fills the options the caller left out
    Given the worker configuration {"protect_recent_tokens": 0, "min_free_tokens": 1, "max_output_chars": 100}
    When the history is pruned with options {"protect_recent_tokens": null}
    Then the stats are 1982 tokens, 1 parts, 1 scanned

  Scenario: protected functions are neither scanned nor pruned
    When the history is pruned with options {"protect_recent_tokens": 0, "min_free_tokens": 1, "protected_functions": ["shell::run"]}
    Then the stats are 0 tokens, 0 parts, 0 scanned

  Scenario: outputs age out after enough later user turns
    Given a result of 400 "y" characters from call "c6" to "small::read" at 6
    And a user turn "fourth" at 7
    When the history is pruned with options {"protect_recent_tokens": 0, "min_free_tokens": 1, "max_output_chars": 2000, "protected_user_turns": 0, "decay_user_turns": 1}
    Then message 5 reads "[output of small::read pruned: was ~100 tokens; re-call it if still needed]"

  Scenario: a request without messages is refused with the stable code
    When a prune request without messages is sent
    Then the call fails with "handler error: context/invalid_request: messages is required"

  Scenario: a negative threshold is a decoding failure
    When the history is pruned with options {"decay_user_turns": -1}
    Then the call fails with "serialization error: invalid value: integer `-1`, expected usize"
