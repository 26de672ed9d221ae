"""The committed models of chapter 10 (``make model``); see ``models/train.py``."""
