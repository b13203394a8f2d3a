"""Package discovery for the top-level folders of the ``infersight`` namespace.

``pyproject.toml`` declares everything else; setuptools' ``packages.find`` cannot map a folder
(``collector/``) onto a dotted name (``infersight.collector``), so the packages are found here,
folder by folder, and a subpackage added later ships without anyone listing it.
"""

from setuptools import find_packages, setup

FOLDERS = {"sdk": "infersight.sdk", "collector": "infersight.collector", "detectors": "infersight.detectors",
           "judges": "infersight.judges", "dashboards": "infersight.dashboards", "demo": "infersight.demo"}

setup(
    package_dir={name: folder for folder, name in FOLDERS.items()},
    packages=[
        f"{name}.{sub}" if sub else name
        for folder, name in FOLDERS.items()
        for sub in ["", *find_packages(folder)]
    ],
)
