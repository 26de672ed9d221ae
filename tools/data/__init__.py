"""The data the book ships, built from the book and its models (commit what they write).

* ``corpus``            chapter 10's corpus: the text of chapters 1-9, one snapshot per edition;
* ``explorer_export``   a chapter 10 checkpoint as the attention explorer's weights (float16);
* ``explorer_presets``  the explorer's presets: heads of the model that do one nameable thing.
"""
