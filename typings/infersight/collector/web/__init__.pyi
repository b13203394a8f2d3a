from collector.web import *
