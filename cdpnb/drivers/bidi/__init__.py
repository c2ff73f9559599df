"""The WebDriver BiDi driver: its session (``session``), input, screenshots and the
dialog bridge over ``network.addIntercept``."""
