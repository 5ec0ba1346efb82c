Feature: Counting tokens without changing anything
  A harness asks how large a request is before it decides what to send.
  The count is the heuristic of the original worker: bytes of the compact JSON over four,
  plus a flat allowance per image, and nothing in the request is altered.

  Scenario: every role is counted and reported in its own bucket
    Given a user message "how warm is it now?" at 1001
    And an assistant reply "clear skies and a light wind." at 1002
    And a result "22 degrees" of call "c1" to "weather::get" with empty details at 1003
    And a custom "ui_marker" message "app-facing bookkeeping" at 1004
    When the history is counted for model "m1"
    Then the wire response is {"by_role":{"assistant":40,"custom":30,"function_result":44,"user":22},"estimator":"heuristic","tokens":136}

  Scenario: an image costs the same whatever its size
    Given a user message with a PNG image of 4 base64 characters at 1
    When the history is counted for model "m1"
    Then the total is 4117 tokens
    Given the image grows to 729420 base64 characters
    When the history is counted for model "m1"
    Then the total is 4117 tokens

  Scenario: named parts are reported but never added to the total
    Given the part "identity" holds 16 characters
    And the part "guidance" holds 8 characters
    When the history is counted for model "m1"
    Then the total is 0 tokens
    And the parts are reported as {"guidance":2,"identity":4}

  Scenario: a request without messages is refused with the stable code
    Given the request has no messages member
    When the history is counted for model "m1"
    Then the call fails with "handler error: context/invalid_request: messages is required"
