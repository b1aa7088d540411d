import streamlit as st

from ui.bootstrap import page_setup

page_setup()
st.title("Experiments")
