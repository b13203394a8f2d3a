from collector import *
