from collector.errors import *
