"""The data the book ships, built from the book and its models (commit what they write).

* ``corpus``            chapter 10's corpus: the text of chapters 1-9, one snapshot per edition;
* ``explorer_export``   a chapter 10 checkpoint as the attention explorer's weights (float16);
* ``explorer_presets``  the explorer's presets: heads of the model that do one nameable thing;
* ``explorer_book``     chapter 3's worked example and the weights' colormap, for the explorer
                        (written at build time into ``.cache/explorer/``, not committed).
"""
