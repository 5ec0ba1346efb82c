Feature: Resolving the target model and computing its usable budget
  A caller names a model with inline limits, or by id for llm-router to resolve. The worker
  turns the limits into a usable input budget: the input limit, or the window minus the output
  tokens, less a reserve and the thinking budget of the requested tier. Router answers are
  cached; an unknown model or a missing router falls back to conservative limits unless the
  operator forbids it.

  Background:
    Given a user turn "hello" at 1001

  Scenario Outline: inline limits with the default reserve
    When the history is assembled with inline limits <window> / <output> and input limit <input_limit>
    Then the model is resolved "inline"
    And the usable budget is <usable>
    And the effective output budget is <output>

    Examples:
      | window  | output | input_limit | usable |
      | 200000  | 8000   | none        | 172000 |
      | 32000   | 16000  | none        | 12800  |
      | 10000   | 1000   | none        | 8000   |
      | 10000   | 1000   | 5000        | 4000   |
      | 10000   | 1000   | 50000       | 49000  |

  Scenario: an output budget larger than the window leaves no usable budget
    When the history is assembled with inline limits 1000 / 2000 and input limit none
    Then the call fails with "handler error: context/overflow: assembled context requires 18 tokens but usable budget is 0"

  Scenario: a reserve larger than the input base leaves no usable budget
    Given the options {"reserved_tokens": 10000}
    When the history is assembled with inline limits 8192 / 1024 and input limit none
    Then the call fails with "handler error: context/overflow: assembled context requires 18 tokens but usable budget is 0"

  Scenario Outline: an explicit reserve replaces the default one
    Given the options {"reserved_tokens": <reserve>}
    When the history is assembled with inline limits <window> / <output> and input limit <input_limit>
    Then the usable budget is <usable>

    Examples:
      | window | output | input_limit | reserve | usable |
      | 10000  | 1000   | none        | 0       | 9000   |
      | 200000 | 8000   | 100000      | 20000   | 80000  |
      | 120000 | 8000   | none        | 4992    | 107008 |

  Scenario: a catalogue model is resolved by the router
    Given the router knows model "small" with a 32000 token window and 16000 output tokens
    When the history is assembled for model "small"
    Then the model is resolved "router"
    And the usable budget is 12800
    And the effective output budget is 16000
    And the router was asked 1 time with {"id":"small"}

  Scenario: the provider is passed to the router when given
    Given the router knows model "small" with a 32000 token window and 16000 output tokens
    When the history is assembled for model "small" of provider "acme"
    Then the router was asked 1 time with {"id":"small","provider":"acme"}

  Scenario Outline: the router's effective output cap lowers the output budget
    Given the router knows model "gpt" with a 272000 token window and 128000 output tokens
    And the router caps the output of "gpt" at <cap> tokens
    When the history is assembled for model "gpt"
    Then the effective output budget is <effective>
    And the usable budget is <usable>

    Examples:
      | cap    | effective | usable |
      | 32000  | 32000     | 220000 |
      | 200000 | 128000    | 124000 |

  Scenario Outline: thinking tiers reserve the model's declared budget
    Given the router knows model "thinker" with a 100000 token window and 10000 output tokens
    And model "thinker" declares a "high" thinking budget of 16000 tokens
    And the options {"thinking_level": <level>}
    When the history is assembled for model "thinker"
    Then the usable budget is <usable>

    Examples:
      | level    | usable |
      | "high"   | 64000  |
      | "low"    | 80000  |
      | null     | 80000  |

  Scenario: inline models ignore the thinking tier
    Given the options {"thinking_level": "xhigh"}
    When the history is assembled with inline limits 10000 / 1000 and input limit none
    Then the usable budget is 8000

  Scenario: inline limits never consult the router
    Given the router knows model "small" with a 32000 token window and 16000 output tokens
    When the history is assembled for model "small" with inline limits 10000 / 1000
    Then the model is resolved "inline"
    And the router was asked 0 times

  Scenario: an unknown model gets the fallback limits
    When the history is assembled for model "ghost-model"
    Then the model is resolved "fallback"
    And the usable budget is 6349
    And the effective output budget is 1024

  Scenario: a failing router gets the fallback limits
    Given the router fails with "invocation timed out"
    When the history is assembled for model "ghost-model"
    Then the model is resolved "fallback"
    And the usable budget is 6349

  Scenario: an older router without the budget function is asked for the model record
    Given the router only offers router::models::get
    And the router knows model "small" with a 32000 token window and 16000 output tokens
    When the history is assembled for model "small"
    Then the model is resolved "router"
    And the usable budget is 12800

  Scenario: an unknown model is an error when fallback limits are not allowed
    Given the worker configuration {"allow_fallback_limits": false}
    When the history is assembled for model "ghost-model"
    Then the call fails with "handler error: context/model_unresolved: could not resolve model limits (model ghost-model is not in the router catalog)"

  Scenario: a failing router is an error when fallback limits are not allowed
    Given the worker configuration {"allow_fallback_limits": false}
    And the router fails with "E"
    When the history is assembled for model "ghost-model"
    Then the call fails with "handler error: context/model_unresolved: could not resolve model limits (router unavailable: E)"

  Scenario: a known budget is cached for a minute
    Given the router knows model "m" with a 100000 token window and 8000 output tokens
    When the history is assembled for model "m" at 0 ms
    And the history is assembled for model "m" at 60000 ms
    Then the router was asked 1 time
    When the history is assembled for model "m" at 60001 ms
    Then the router was asked 2 times

  Scenario: an unknown model is cached for five seconds
    When the history is assembled for model "ghost" at 0 ms
    And the history is assembled for model "ghost" at 5000 ms
    Then the router was asked 1 time
    When the history is assembled for model "ghost" at 5001 ms
    Then the router was asked 2 times

  Scenario: router failures are never cached
    Given the router fails with "down"
    When the history is assembled for model "m" at 0 ms
    And the history is assembled for model "m" at 1 ms
    Then the router was asked 2 times

  Scenario: a catalogue change flushes the cache
    Given the router knows model "m" with a 100000 token window and 8000 output tokens
    When the history is assembled for model "m" at 0 ms
    And the router announces a catalogue change for provider "acme"
    And the history is assembled for model "m" at 1 ms
    Then the router was asked 2 times
