Feature: Compaction never loses the task
  A single-task session starts with one request and then reads file after file. A summariser
  that keeps almost nothing would fold the request and the files into a summary that names
  neither. Two opt-in rules keep them: an anchor pins the first messages so compaction never
  touches them, and the retention check appends to every summary the requests, paths and open
  error it left out, carrying them through every later update of that summary.

  Background:
    Given the summariser answers "## Goal\n- (none)"
    And an inline model of 5000 tokens with 500 for output
    And the task "Port the parser in src/parse.py" and 5 rounds reading src/mod1.py to src/mod5.py of 1000 tokens each

  Scenario: without the check the summary is kept as written
    When the history is assembled
    Then the history was compacted from request message 9 onward
    And the summary is "## Goal\n- (none)"
    And no retained items are reported

  Scenario: the retention check appends what the summary left out
    Given the worker configuration {"summary_check": "append"}
    When the history is assembled
    Then the history was compacted from request message 9 onward
    And the summary is
      """
      ## Goal
      - (none)

      ## The user's words
      - Port the parser in src/parse.py

      ## Retained details
      - src/mod1.py
      - src/mod2.py
      - src/mod3.py
      - src/mod4.py
      """
    And 5 retained items are reported

  Scenario: what the check kept survives the next compaction
    Given the worker configuration {"summary_check": "append"}
    When the history is assembled
    And the harness keeps the summary and the messages from the reported index onward
    And 4 more rounds reading src/mod6.py to src/mod9.py of 1000 tokens each are appended
    And the history is assembled
    Then the summary is
      """
      ## Goal
      - (none)

      ## The user's words
      - Port the parser in src/parse.py

      ## Retained details
      - src/mod1.py
      - src/mod2.py
      - src/mod3.py
      - src/mod4.py
      - src/mod5.py
      - src/mod6.py
      - src/mod7.py
      - src/mod8.py
      """
    And 9 retained items are reported

  Scenario: an anchor keeps the request out of the summarised head
    Given the worker configuration {"anchor_messages": 1, "summary_check": "append"}
    When the history is assembled
    Then the returned messages start with the task "Port the parser in src/parse.py"
    And the summariser never saw the task
    And the summary is
      """
      ## Goal
      - (none)

      ## Retained details
      - src/mod1.py
      - src/mod2.py
      - src/mod3.py
      - src/mod4.py

      <!-- context-manager:anchor -->
      [{"role":"user","content":[{"type":"text","text":"Port the parser in src/parse.py"}],"timestamp":1}]
      <!-- /context-manager:anchor -->
      """

  Scenario: the anchor comes back to a harness that sends only the tail
    Given the worker configuration {"anchor_messages": 1, "summary_check": "append"}
    When the history is assembled
    And the harness keeps the summary and the messages from the reported index onward
    And 4 more rounds reading src/mod6.py to src/mod9.py of 1000 tokens each are appended
    And the history is assembled
    Then the history was compacted from request message 8 onward
    And the returned messages start with the task "Port the parser in src/parse.py"
    And the task is in the returned messages once
    And the summary is
      """
      ## Goal
      - (none)

      ## Retained details
      - src/mod1.py
      - src/mod2.py
      - src/mod3.py
      - src/mod4.py
      - src/mod5.py
      - src/mod6.py
      - src/mod7.py
      - src/mod8.py

      <!-- context-manager:anchor -->
      [{"role":"user","content":[{"type":"text","text":"Port the parser in src/parse.py"}],"timestamp":1}]
      <!-- /context-manager:anchor -->
      """
