"""The WebDriver classic driver: an HTTP session polled for dialogs, its element
actions, its script values and screenshots (no dialog bridge: it cannot intercept
requests)."""
