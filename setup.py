"""Package list: `parsers/`, `rules/`, `reports/` live at the top level but install as advisor.*.

The mapping itself is in pyproject.toml ([tool.setuptools] package-dir); this only enumerates the
sub-packages (rule categories grow over time) so nobody has to list them by hand.
"""

from setuptools import find_packages, setup

packages = ["advisor", *(f"advisor.{p}" for p in find_packages("advisor"))]
for top in ("parsers", "rules", "reports"):
    packages += [f"advisor.{top}", *(f"advisor.{top}.{p}" for p in find_packages(top))]

setup(packages=packages)
