from dashboards import *
