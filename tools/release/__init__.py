"""The package as a reader outside the repository gets it.

* ``package``  its one version, its wheel, and the setup cell of every notebook the site offers.
"""
