from detectors import *
